// Package like matches SQL LIKE patterns as Flight SQL filter patterns use
// them: '%' matches any run of characters, '_' exactly one, and a backslash
// makes the next '%', '_' or '\' literal.
//
// Patterns come from clients and names from tenants, so the work is
// bounded: a pattern has at most MaxPatternBytes bytes and MaxWildcards
// '%', and matching is linear in the length of the string (see Match).
//
// It lives under pkg/ because the patterns are part of lake's protocol:
// pkg/wire bounds a lake.search body by MaxPatternBytes, and a client may
// check a pattern before it sends it, as the discovery server does when it
// receives it.
package like

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrPattern is wrapped by every invalid pattern error.
var ErrPattern = errors.New("like: invalid pattern")

// MaxPatternBytes bounds a pattern.
const MaxPatternBytes = 1024

// MaxWildcards bounds the unescaped '%' in a pattern. No SQL tool sends
// more than a few; each one is a segment matched in turn.
const MaxWildcards = 32

// Pattern is a compiled LIKE pattern. It is safe for concurrent use.
type Pattern struct {
	// literal holds the unescaped text when the pattern has no wildcard.
	literal string
	exact   bool
	// prefix is the literal text before the first wildcard.
	prefix string
	all    bool
	// segs are the pattern's runs between '%': segs[0] must match at the
	// start and, with more than one, the last at the end; the ones between
	// anywhere in order. With no '%' there is one segment, the whole string.
	segs []*segment
}

// tok is one pattern character: a literal rune, or '_' (any).
type tok struct {
	r   rune
	any bool
}

// segment is a run of pattern characters between '%', with (for a segment
// between the first and the last, which match in place) the bit masks of
// a shift-and search: masks[m] has bit j set where toks[j] is '_' or the
// rune m stands for (masks[0]: '_' only, for runes the segment lacks).
type segment struct {
	toks  []tok
	words int
	ascii [utf8.RuneSelf]int32
	other map[rune]int32
	masks [][]uint64
}

// Compile parses pattern. A lone trailing backslash, a backslash before any
// other character, invalid UTF-8, overlong patterns and patterns with more
// than MaxWildcards '%' are errors.
func Compile(pattern string) (*Pattern, error) {
	if len(pattern) > MaxPatternBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPattern, len(pattern), MaxPatternBytes)
	}
	if !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrPattern)
	}
	var (
		lit         strings.Builder
		wild        bool
		prefix      string
		prefixFixed bool
		percents    int
		cur         []tok
		runs        [][]tok
	)
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
			cur = append(cur, tok{r: next})
		case '%', '_':
			if !prefixFixed {
				prefix, prefixFixed = lit.String(), true
			}
			wild = true
			if r == '_' {
				cur = append(cur, tok{any: true})
				continue
			}
			if percents++; percents > MaxWildcards {
				return nil, fmt.Errorf("%w: more than %d %% wildcards", ErrPattern, MaxWildcards)
			}
			runs = append(runs, cur)
			cur = nil
		default:
			lit.WriteRune(r)
			cur = append(cur, tok{r: r})
		}
	}
	runs = append(runs, cur)
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
	// The first and last runs keep their places (possibly empty) and are
	// compared in place, so they need no search masks; empty runs between
	// them ("%%") match anywhere and are dropped.
	for k, run := range runs {
		switch {
		case k == 0 || k == len(runs)-1:
			p.segs = append(p.segs, &segment{toks: run})
		case len(run) > 0:
			p.segs = append(p.segs, newSegment(run))
		}
	}
	return p, nil
}

func newSegment(toks []tok) *segment {
	g := &segment{toks: toks, words: (len(toks) + 63) / 64, other: map[rune]int32{}}
	g.masks = [][]uint64{make([]uint64, g.words)}
	for j, t := range toks {
		if t.any {
			g.masks[0][j/64] |= 1 << (j % 64)
		}
	}
	for j, t := range toks {
		if t.any {
			continue
		}
		m := g.index(t.r)
		if m == 0 {
			m = int32(len(g.masks))
			g.masks = append(g.masks, append([]uint64(nil), g.masks[0]...))
			if t.r < utf8.RuneSelf {
				g.ascii[t.r] = m
			} else {
				g.other[t.r] = m
			}
		}
		g.masks[m][j/64] |= 1 << (j % 64)
	}
	return g
}

// index is the mask of rune r.
func (g *segment) index(r rune) int32 {
	if r >= 0 && r < utf8.RuneSelf {
		return g.ascii[r]
	}
	return g.other[r]
}

func (t tok) matches(r rune) bool { return t.any || t.r == r }

// Match reports whether s matches the pattern. It reads s a bounded number
// of times: the first and last segments are compared in place, and each
// segment between is found by a shift-and search starting where the one
// before ended, so the work is linear in len(s) (times one word per 64
// pattern characters), whatever the pattern.
func (p *Pattern) Match(s string) bool {
	ok, _ := p.match(s)
	return ok
}

// match is Match, also returning the steps taken (runes read, counted
// once per mask word), for tests that bound the work.
func (p *Pattern) match(s string) (bool, int) {
	switch {
	case p.exact:
		return s == p.literal, 0
	case p.all:
		return true, 0
	case !strings.HasPrefix(s, p.prefix):
		return false, 0
	}
	steps := 0
	first := p.segs[0]
	pos := 0
	for _, t := range first.toks {
		if pos >= len(s) {
			return false, steps
		}
		r, n := utf8.DecodeRuneInString(s[pos:])
		steps++
		if !t.matches(r) {
			return false, steps
		}
		pos += n
	}
	if len(p.segs) == 1 {
		return pos == len(s), steps
	}
	last := p.segs[len(p.segs)-1]
	end := len(s)
	for j := len(last.toks) - 1; j >= 0; j-- {
		if end <= pos {
			return false, steps
		}
		r, n := utf8.DecodeLastRuneInString(s[:end])
		steps++
		if !last.toks[j].matches(r) {
			return false, steps
		}
		end -= n
	}
	for _, g := range p.segs[1 : len(p.segs)-1] {
		next, n := g.find(s[pos:end])
		steps += n
		if next < 0 {
			return false, steps
		}
		pos += next
	}
	return true, steps
}

// find returns the byte offset just past the leftmost occurrence of the
// segment in s (-1 when there is none) and the steps taken: one pass of
// shift-and, a state bit per segment character.
func (g *segment) find(s string) (int, int) {
	k := len(g.toks)
	state := make([]uint64, g.words)
	top, topWord := uint64(1)<<((k-1)%64), (k-1)/64
	steps := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		mask := g.masks[g.index(r)]
		carry := uint64(1)
		for w := range state {
			next := state[w] >> 63
			state[w] = (state[w]<<1 | carry) & mask[w]
			carry = next
		}
		steps += g.words
		if state[topWord]&top != 0 {
			return i, steps
		}
	}
	return -1, steps
}

// Exact returns the only string the pattern matches, when it has no wildcard.
func (p *Pattern) Exact() (string, bool) { return p.literal, p.exact }

// Prefix returns the literal text every match starts with: a sorted list
// needs to look only at the names with this prefix.
func (p *Pattern) Prefix() string { return p.prefix }

// All reports whether the pattern matches every string ("%", "%%", …).
func (p *Pattern) All() bool { return p.all }
