// Package like matches SQL LIKE patterns as Flight SQL filter patterns use
// them: '%' matches any run of characters, '_' exactly one, and a backslash
// makes the next '%', '_' or '\' literal.
package like

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ErrPattern is wrapped by every invalid pattern error.
var ErrPattern = errors.New("like: invalid pattern")

// MaxPatternBytes bounds a pattern.
const MaxPatternBytes = 1024

// Pattern is a compiled LIKE pattern. It is safe for concurrent use.
type Pattern struct {
	// literal holds the unescaped text when the pattern has no wildcard.
	literal string
	exact   bool
	// prefix is the literal text before the first wildcard.
	prefix string
	all    bool
	re     *regexp.Regexp
}

// Compile parses pattern. A lone trailing backslash, a backslash before any
// other character, invalid UTF-8 and overlong patterns are errors.
func Compile(pattern string) (*Pattern, error) {
	if len(pattern) > MaxPatternBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPattern, len(pattern), MaxPatternBytes)
	}
	if !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrPattern)
	}
	var (
		re          strings.Builder
		lit         strings.Builder
		wild        bool
		prefix      string
		prefixFixed bool
	)
	re.WriteString(`^(?s:`)
	for i := 0; i < len(pattern); {
		r, size := utf8.DecodeRuneInString(pattern[i:])
		i += size
		switch r {
		case '\\':
			if i >= len(pattern) {
				return nil, fmt.Errorf("%w: %q ends with a lone escape character", ErrPattern, pattern)
			}
			next, n := utf8.DecodeRuneInString(pattern[i:])
			if next != '%' && next != '_' && next != '\\' {
				return nil, fmt.Errorf("%w: %q escapes %q; only %%, _ and \\ can be escaped", ErrPattern, pattern, next)
			}
			i += n
			lit.WriteRune(next)
			re.WriteString(regexp.QuoteMeta(string(next)))
		case '%', '_':
			if !prefixFixed {
				prefix, prefixFixed = lit.String(), true
			}
			wild = true
			if r == '%' {
				re.WriteString(`.*`)
			} else {
				re.WriteString(`.`)
			}
		default:
			lit.WriteRune(r)
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString(`)$`)
	p := &Pattern{}
	if !wild {
		p.exact, p.literal, p.prefix = true, lit.String(), lit.String()
		return p, nil
	}
	p.prefix = prefix
	if strings.Trim(pattern, "%") == "" {
		p.all = true
		return p, nil
	}
	compiled, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPattern, err)
	}
	p.re = compiled
	return p, nil
}

// Match reports whether s matches the pattern.
func (p *Pattern) Match(s string) bool {
	switch {
	case p.exact:
		return s == p.literal
	case p.all:
		return true
	case !strings.HasPrefix(s, p.prefix):
		return false
	}
	return p.re.MatchString(s)
}

// Exact returns the only string the pattern matches, when it has no wildcard.
func (p *Pattern) Exact() (string, bool) { return p.literal, p.exact }

// Prefix returns the literal text every match starts with: a sorted list
// needs to look only at the names with this prefix.
func (p *Pattern) Prefix() string { return p.prefix }

// All reports whether the pattern matches every string ("%", "%%", …).
func (p *Pattern) All() bool { return p.all }
