package vending

import (
	"regexp"
	"strings"
	"testing"
)

var (
	sessionNameRE = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	tagKeyRE      = regexp.MustCompile(`^[A-Za-z0-9 _.:/=+@-]{1,128}$`)
	tagValueRE    = regexp.MustCompile(`^[A-Za-z0-9 _.:/=+@-]{0,256}$`)
)

func TestSessionName(t *testing.T) {
	long := strings.Repeat("t", 300)
	tests := []struct {
		tenant, namespace, table string
		wantPrefix               string
	}{
		{"acme", "sales", "orders", "lake-acme-"},
		{"acme corp/ü", "sales", "orders", "lake-acme_corp___-"},
		{long, "sales", "orders", "lake-" + long[:maxNameTenant] + "-"},
		{"", "", "", "lake--"},
	}
	for _, tt := range tests {
		t.Run(tt.tenant, func(t *testing.T) {
			got := SessionName(tt.tenant, tt.namespace, tt.table)
			if !sessionNameRE.MatchString(got) {
				t.Fatalf("SessionName = %q, breaks STS's RoleSessionName rules", got)
			}
			if !strings.HasPrefix(got, tt.wantPrefix) {
				t.Fatalf("SessionName = %q, want prefix %q", got, tt.wantPrefix)
			}
		})
	}
	a := SessionName("acme", "sales", "orders")
	for _, other := range [][3]string{{"acme", "sales", "order"}, {"acme", "sale", "sorders"}, {"acme2", "sales", "orders"}} {
		if b := SessionName(other[0], other[1], other[2]); a == b {
			t.Fatalf("SessionName(%q) = SessionName(acme/sales/orders) = %q, want distinct", other, a)
		}
	}
	if b := SessionName("acme", "sales", "orders"); a != b {
		t.Fatalf("SessionName not stable: %q then %q", a, b)
	}
}

func TestSessionTags(t *testing.T) {
	tests := []struct {
		name                     string
		tenant, namespace, table string
		want                     []Tag
	}{
		{"plain", "acme", "sales.eu", "orders", []Tag{
			{Key: TagTenant, Value: "acme"}, {Key: TagNamespace, Value: "sales.eu"}, {Key: TagTable, Value: "orders"},
		}},
		{"sanitized", "acme", "sales\x1feu", "ordérs", []Tag{
			{Key: TagTenant, Value: "acme"},
			{Key: TagNamespace, Value: "sales_eu+" + shortHash("sales\x1feu")},
			{Key: TagTable, Value: "ord__rs+" + shortHash("ordérs")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SessionTags(tt.tenant, tt.namespace, tt.table)
			if len(got) != len(tt.want) {
				t.Fatalf("SessionTags = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("SessionTags[%d] = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
	long := strings.Repeat("x", 1000)
	for _, tag := range SessionTags(long, long+"/\x00", "a b:c") {
		if !tagKeyRE.MatchString(tag.Key) || !tagValueRE.MatchString(tag.Value) {
			t.Fatalf("tag %q=%q breaks STS's tag rules", tag.Key, tag.Value)
		}
	}
	if a, b := SessionTags(long+"1", "n", "t")[0].Value, SessionTags(long+"2", "n", "t")[0].Value; a == b {
		t.Fatalf("long tenants collide in their tag value %q", a)
	}
}
