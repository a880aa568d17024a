package vending

import (
	"errors"
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	tests := []struct {
		in         string
		wantBucket string
		wantPrefix string
		wantErr    error
	}{
		{in: "s3://bucket/sales/orders/", wantBucket: "bucket", wantPrefix: "sales/orders/"},
		{in: "s3://bucket/sales/orders", wantBucket: "bucket", wantPrefix: "sales/orders/"},
		{in: "s3://my.bucket-1/dt=2024-01-01/", wantBucket: "my.bucket-1", wantPrefix: "dt=2024-01-01/"},
		{in: "s3://bucket/a.b/c_d/", wantBucket: "bucket", wantPrefix: "a.b/c_d/"},
		{in: "s3a://bucket/p/", wantErr: ErrScheme},
		{in: "S3://bucket/p/", wantErr: ErrScheme},
		{in: "bucket/p/", wantErr: ErrScheme},
		{in: "s3://bucket", wantErr: ErrEmptyPrefix},
		{in: "s3://bucket/", wantErr: ErrEmptyPrefix},
		{in: "s3://bucket//", wantErr: ErrDoubleSlash},
		{in: "s3://bucket//p/", wantErr: ErrDoubleSlash},
		{in: "s3://bucket/a//b/", wantErr: ErrDoubleSlash},
		{in: "s3://bucket/a/../b/", wantErr: ErrDotSegment},
		{in: "s3://bucket/../b/", wantErr: ErrDotSegment},
		{in: "s3://bucket/a/./b/", wantErr: ErrDotSegment},
		{in: "s3://bucket/a/..", wantErr: ErrDotSegment},
		{in: "s3://bucket/a*/", wantErr: ErrWildcard},
		{in: "s3://bucket/a?/", wantErr: ErrWildcard},
		{in: "s3://bucket/a\x00/", wantErr: ErrControl},
		{in: "s3://bucket/a\n/", wantErr: ErrControl},
		{in: "s3://bucket/a\x7f/", wantErr: ErrControl},
		{in: "s3://bucket/${aws:username}/", wantErr: ErrCharacter},
		{in: "s3://bucket/caf\u00e9/", wantErr: ErrCharacter},
		{in: "s3://bucket/a b/", wantErr: ErrCharacter},
		{in: "s3://bucket/a\"b/", wantErr: ErrCharacter},
		{in: "s3://bucket/a\\b/", wantErr: ErrCharacter},
		{in: "s3://bucket/a(1)/", wantErr: ErrCharacter},
		{in: "s3://bucket/it's/", wantErr: ErrCharacter},
		{in: "s3://bucket/a%20b/", wantErr: ErrCharacter},
		{in: "s3://ab/p/", wantErr: ErrBucket},
		{in: "s3://" + strings.Repeat("a", 64) + "/p/", wantErr: ErrBucket},
		{in: "s3://Bucket/p/", wantErr: ErrBucket},
		{in: "s3://-bucket/p/", wantErr: ErrBucket},
		{in: "s3://bucket-/p/", wantErr: ErrBucket},
		{in: "s3://buck..et/p/", wantErr: ErrBucket},
		{in: "s3://buck_et/p/", wantErr: ErrBucket},
		{in: "s3://192.168.1.1/p/", wantErr: ErrBucket},
		{in: "s3://xn--bucket/p/", wantErr: ErrBucket},
		{in: "s3://bucket-s3alias/p/", wantErr: ErrBucket},
		{in: "s3://bucket/" + strings.Repeat("a", MaxLocationLength) + "/", wantErr: ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLocation(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParseLocation(%q) error = %v, want %v", tt.in, err, tt.wantErr)
				}
				var le *LocationError
				if !errors.As(err, &le) || le.Location != tt.in {
					t.Fatalf("ParseLocation(%q) error = %#v, want *LocationError naming the input", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLocation(%q) error = %v", tt.in, err)
			}
			if got.Bucket != tt.wantBucket || got.Prefix != tt.wantPrefix {
				t.Fatalf("ParseLocation(%q) = %+v, want bucket %q prefix %q", tt.in, got, tt.wantBucket, tt.wantPrefix)
			}
		})
	}
}

func TestParseLocationLongest(t *testing.T) {
	loc := longestLocation()
	if len(loc) != MaxLocationLength {
		t.Fatalf("longest location is %d chars, want %d", len(loc), MaxLocationLength)
	}
	if _, err := ParseLocation(loc); err != nil {
		t.Fatalf("ParseLocation(longest) error = %v", err)
	}
	_, err := ParseLocation(loc[:len(loc)-1] + "a/")
	if !errors.Is(err, ErrTooLong) {
		t.Fatalf("ParseLocation(longest+1) error = %v, want %v", err, ErrTooLong)
	}
	if !strings.Contains(err.Error(), "256") {
		t.Fatalf("ParseLocation(longest+1) error = %q, want it to name the limit", err)
	}
}

// longestLocation is a location of exactly MaxLocationLength characters with a
// bucket of the longest allowed name.
func longestLocation() string {
	head := "s3://" + strings.Repeat("b", 63) + "/"
	return head + strings.Repeat("p", MaxLocationLength-len(head)-1) + "/"
}

func TestLocationString(t *testing.T) {
	loc, err := ParseLocation("s3://bucket/sales/orders")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := loc.String(), "s3://bucket/sales/orders/"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{
		"s3://bucket/sales/orders/", "s3://bucket", "s3://bucket//", "s3://a.b-c/x=1/y/",
		"s3://bucket/a/../b", "s3://bucket/*", longestLocation(),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseLocation(s)
		if err != nil {
			return
		}
		again, err := ParseLocation(loc.String())
		if err != nil {
			t.Fatalf("ParseLocation(%q) = %+v, but its rendering %q does not parse: %v", s, loc, loc.String(), err)
		}
		if again != loc {
			t.Fatalf("ParseLocation(%q) = %+v, re-rendered parses to %+v", s, loc, again)
		}
		if _, err := SessionPolicy(loc); err != nil {
			t.Fatalf("SessionPolicy(%+v) error = %v for a parsed location", loc, err)
		}
	})
}
