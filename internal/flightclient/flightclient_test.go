package flightclient

import "testing"

func TestEscapeLike(t *testing.T) {
	tests := []struct{ in, want string }{
		{"orders", "orders"},
		{"100%_done", `100\%\_done`},
		{`a\b`, `a\\b`},
		{"販売", "販売"},
	}
	for _, tt := range tests {
		if got := EscapeLike(tt.in); got != tt.want {
			t.Errorf("EscapeLike(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
