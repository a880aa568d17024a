package like

import (
	"strings"
	"testing"
)

// Matching is linear in the string: the steps Match takes stay within a
// small multiple of its length, for patterns that make a backtracking
// matcher quadratic or worse (issue 24, finding 3).
func TestMatchWorkIsLinear(t *testing.T) {
	long := strings.Repeat("a", 200_000)
	tests := []struct {
		name, pattern, s string
		want             bool
	}{
		{"many segments, no final match", strings.Repeat("%a", 31) + "%b", long, false},
		{"many segments, final match", strings.Repeat("%a", 31) + "%b", long + "b", true},
		{"long segment that almost matches everywhere", "%" + strings.Repeat("a", 900) + "b%", long, false},
		{"underscores and a missing letter", strings.Repeat("_%", 32) + "Q", long, false},
		{"multibyte runes", "%" + strings.Repeat("é_", 100) + "%", strings.Repeat("é", 100_000), true},
		{"multibyte runes, no match", "%" + strings.Repeat("é_", 100) + "x%", strings.Repeat("é", 100_000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			ok, steps := p.match(tt.s)
			if ok != tt.want {
				t.Fatalf("match = %v, want %v", ok, tt.want)
			}
			// One pass over the string per mask word (at most 16 for a
			// 1,024-byte pattern), plus the pattern itself.
			if limit := 16*len(tt.s) + len(tt.pattern); steps > limit {
				t.Fatalf("%d steps for a %d-byte string, want at most %d", steps, len(tt.s), limit)
			}
		})
	}
}
