package like_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lake-catalog/lake/pkg/like"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern string
		yes, no []string
	}{
		{"orders", []string{"orders"}, []string{"Orders", "orders2", "order", ""}},
		{"%", []string{"", "x", "any thing"}, nil},
		{"ord%", []string{"ord", "orders", "ord%"}, []string{"or", "xord"}},
		{"%ers", []string{"ers", "orders"}, []string{"ordersx"}},
		{"o_ders", []string{"orders", "o_ders", "oXders"}, []string{"oders", "orrders"}},
		{"_", []string{"a", "é", "日"}, []string{"", "ab"}},
		{`my\_table`, []string{"my_table"}, []string{"myXtable"}},
		{`100\%`, []string{"100%"}, []string{"1000"}},
		{`back\\slash`, []string{`back\slash`}, []string{`backslash`}},
		{`a.b*c`, []string{"a.b*c"}, []string{"aXbbc"}},
		{`%\_%`, []string{"a_b", "_"}, []string{"ab"}},
		{"multi\nline%", []string{"multi\nline and more"}, []string{"multi"}},
		{"%a%b%", []string{"ab", "xaxbx"}, []string{"ba"}},
	}
	for _, tt := range tests {
		p, err := like.Compile(tt.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pattern, err)
		}
		for _, s := range tt.yes {
			if !p.Match(s) {
				t.Errorf("%q should match %q", tt.pattern, s)
			}
		}
		for _, s := range tt.no {
			if p.Match(s) {
				t.Errorf("%q should not match %q", tt.pattern, s)
			}
		}
	}
}

func TestFastPaths(t *testing.T) {
	p, _ := like.Compile(`my\_table`)
	if s, ok := p.Exact(); !ok || s != "my_table" {
		t.Fatalf("Exact() = %q, %v", s, ok)
	}
	p, _ = like.Compile(`sal\%es_%`)
	if _, ok := p.Exact(); ok || p.Prefix() != "sal%es" {
		t.Fatalf("prefix = %q", p.Prefix())
	}
	p, _ = like.Compile("%%")
	if !p.All() {
		t.Fatal("%% does not match all")
	}
}

func TestCompileRejects(t *testing.T) {
	for _, pat := range []string{`abc\`, `\a`, "bad\xff", strings.Repeat("x", like.MaxPatternBytes+1)} {
		if _, err := like.Compile(pat); !errors.Is(err, like.ErrPattern) {
			t.Errorf("Compile(%q) error = %v, want ErrPattern", pat, err)
		}
	}
}

// reference is an independent, slow LIKE: dynamic programming over runes.
func reference(pattern, s string) bool {
	type tok struct {
		r    rune
		kind byte // 'l' literal, '%', '_'
	}
	var toks []tok
	pr := []rune(pattern)
	for i := 0; i < len(pr); i++ {
		switch pr[i] {
		case '\\':
			i++
			toks = append(toks, tok{pr[i], 'l'})
		case '%', '_':
			toks = append(toks, tok{kind: byte(pr[i])})
		default:
			toks = append(toks, tok{pr[i], 'l'})
		}
	}
	sr := []rune(s)
	memo := map[[2]int]bool{}
	var m func(i, j int) bool
	m = func(i, j int) bool {
		if v, ok := memo[[2]int{i, j}]; ok {
			return v
		}
		var v bool
		switch {
		case i == len(toks):
			v = j == len(sr)
		case toks[i].kind == '%':
			v = m(i+1, j) || (j < len(sr) && m(i, j+1))
		case j == len(sr):
			v = false
		case toks[i].kind == '_':
			v = m(i+1, j+1)
		default:
			v = toks[i].r == sr[j] && m(i+1, j+1)
		}
		memo[[2]int{i, j}] = v
		return v
	}
	return m(0, 0)
}

func FuzzMatch(f *testing.F) {
	f.Add("o_d%", "orders")
	f.Add(`a\%b`, "a%b")
	f.Add("%日_", "x日本")
	f.Add(`\\%`, `\x`)
	f.Fuzz(func(t *testing.T, pattern, s string) {
		p, err := like.Compile(pattern)
		if err != nil {
			if !errors.Is(err, like.ErrPattern) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if utf8.ValidString(s) && len(s) < 256 {
			if got, want := p.Match(s), reference(pattern, s); got != want {
				t.Fatalf("Match(%q, %q) = %v, reference says %v", pattern, s, got, want)
			}
		}
	})
}

// A pattern with more than MaxWildcards '%' is refused: the issue-24 probe
// '%a'×511 + '%b' and the GetTables pattern '_%'×240 + 'Q'. Escaped '%'
// are literals and do not count.
func TestCompileBoundsWildcards(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		{strings.Repeat("%a", 511) + "%b", false},
		{strings.Repeat("_%", 240) + "Q", false},
		{strings.Repeat("%", 33), false},
		{strings.Repeat("%a", 32), true},
		{strings.Repeat(`\%`, 200), true},
		{strings.Repeat("_", 500), true},
	}
	for _, tt := range tests {
		_, err := like.Compile(tt.pattern)
		if got := err == nil; got != tt.ok {
			t.Errorf("Compile(%.20q… %d bytes): error %v, want ok %v", tt.pattern, len(tt.pattern), err, tt.ok)
		}
		if err != nil && !errors.Is(err, like.ErrPattern) {
			t.Errorf("Compile(%.20q…): untyped error %v", tt.pattern, err)
		}
	}
}
