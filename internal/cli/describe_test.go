package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

// lake register --description/--property stores them; lake show prints the
// description after the header line and the properties after the columns;
// show --json stays the schema alone; bad --property values and values
// beyond the limits are clear errors.
func TestDescriptionAndProperties(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	pq := filepath.Join(t.TempDir(), "orders", "part-0.parquet")
	writeParquet(t, pq, ordersSchema)
	reg := []string{"register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--parquet", pq}

	l.must(append(reg, "--description", "Orders, one row per order.\nAmounts in EUR.",
		"--property", "owner=team-sales", "--property", "filter=region=eu", "--property", "pii=")...)
	l.refresh()
	got := l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders")
	wantStart := "acme/sales/orders  (TABLE, 5 columns)\n" +
		"description: Orders, one row per order.\n" +
		"             Amounts in EUR.\n" +
		"  order_id   int64"
	wantEnd := "properties:\n  filter = region=eu\n  owner = team-sales\n  pii = \n"
	if !strings.HasPrefix(got, wantStart) || !strings.HasSuffix(got, wantEnd) {
		t.Fatalf("show printed:\n%s\nwant it to start with:\n%s\nand end with:\n%s", got, wantStart, wantEnd)
	}
	s, err := schemajson.Parse([]byte(l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders", "--json")))
	if err != nil || !catalog.SchemaEqual(s, ordersSchema) {
		t.Fatalf("show --json = %v, %v; want the schema alone", s, err)
	}

	// Without the registration API, show prints the schema and says why
	// the description and properties are missing.
	noAPI := &lake{t: t, dir: l.dir, in: l.in, env: map[string]string{
		"LAKE_DATA_DIR": l.dir, "LAKE_API": "http://127.0.0.1:1", "LAKE_DISCOVERY": l.env["LAKE_DISCOVERY"]}}
	out, errOut, code := noAPI.run("show", "--tenant", "acme", "-n", "sales", "-t", "orders")
	if code != 0 || !strings.HasPrefix(out, "acme/sales/orders  (TABLE, 5 columns)\n  order_id") || strings.Contains(out, "properties:") ||
		!strings.HasPrefix(errOut, "note: description, properties and rules not shown: ") {
		t.Fatalf("show without the API: exit %d, stdout:\n%s\nstderr: %q; want the schema alone and a note", code, out, errOut)
	}

	// The same again is an identical retry; another description is not.
	if got := l.must(append(reg, "--description", "Orders, one row per order.\nAmounts in EUR.",
		"--property", "pii=", "--property", "owner=team-sales", "--property", "filter=region=eu")...); !strings.HasPrefix(got, "already registered, identical") {
		t.Fatalf("identical re-register printed %q", got)
	}

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"property without =", []string{"--property", "owner"}, `lake: --property "owner": want key=value` + "\n"},
		{"empty key", []string{"--property", "=x"}, `lake: --property "=x": the key is empty` + "\n"},
		{"duplicate key", []string{"--property", "a=1", "--property", "a=2"}, `lake: --property: key "a" is given twice` + "\n"},
		{"description too long", []string{"--description", strings.Repeat("d", catalog.MaxDescriptionBytes+1)},
			"lake: acme/sales/orders: invalid registration: description of 4097 bytes, limit 4096\n"},
		{"control character", []string{"--description", "bell\a"},
			"lake: acme/sales/orders: invalid registration: description contains control character U+0007 at byte 4 (only newline and tab are allowed)\n"},
		{"bad property key", []string{"--property", "a\tb=1"},
			"lake: acme/sales/orders: invalid registration: property key \"a\\tb\" contains a non-printable character\n"},
		{"another description", []string{"--description", "other"},
			"lake: acme/sales/orders: already registered with a different location, type, schema, description or properties\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := l.run(append(reg, tt.args...)...)
			if code != 1 || errOut != tt.wantErr {
				t.Fatalf("got exit %d, %q; want exit 1, %q", code, errOut, tt.wantErr)
			}
		})
	}
}
