package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// iamMatch reports whether arn matches the IAM resource pattern: each of
// the six colon-separated ARN segments is matched on its own, '*' matching
// any run of characters ('/' included) and '?' exactly one.
func iamMatch(pattern, arn string) bool {
	ps, as := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(ps) != 6 || len(as) != 6 {
		return false
	}
	for i := range ps {
		if !globMatch([]rune(ps[i]), []rune(as[i])) {
			return false
		}
	}
	return true
}

// globMatch matches s against p, where '*' is any run and '?' one rune.
func globMatch(p, s []rune) bool {
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func TestIAMMatch(t *testing.T) {
	const real = "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3/$default/GET/v1/tenants/acme/namespaces/sales/tables/orders"
	tests := []struct {
		pattern string
		want    bool
	}{
		{real, true},
		{"arn:aws:execute-api:eu-west-1:123456789012:a1b2c3/*/*/v1/tenants/acme/namespaces/*", true},
		{"arn:aws:execute-api:eu-west-1:123456789012:a1b2c3/*", true},
		{"arn:aws:execute-api:*:*:a1b2c3/*", true},
		{"arn:aws:execute-api:eu-west-1:123456789012:a1b2c3/?default/GET/v1/tenants/acm?/namespaces/*", true},
		{"arn:aws:execute-api:eu-west-1:123456789012:a1b2c3/*/*/v1/tenants/acme?/namespaces/*", false},
		{"arn:aws:execute-api:eu-west-1:123456789012:a1b2c3/*/*/v1/tenants/globex/namespaces/*", false},
		// What the stack synthesized before: ArnForExecuteApi() already
		// ends in /*/*/*, so appending /*/*/v1/… asked for five segments
		// before v1 where a request has two (stage, method).
		{"arn:aws:execute-api:eu-west-1:123456789012:a1b2c3/*/*/*/*/*/v1/tenants/acme/namespaces/*", false},
		// '*' does not cross the colons between ARN segments.
		{"arn:aws:execute-api:eu-west-1:*", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			if got := iamMatch(tt.pattern, real); got != tt.want {
				t.Fatalf("iamMatch(%q, %q) = %v, want %v", tt.pattern, real, got, tt.want)
			}
		})
	}
}

// resolve evaluates a CloudFormation value made of strings, Ref and
// Fn::Join, with refs naming what each Ref resolves to.
func resolve(v any, refs map[string]string) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			if r, ok := refs[ref]; ok {
				return r, nil
			}
			return "", fmt.Errorf("unknown Ref %s", ref)
		}
		if join, ok := x["Fn::Join"].([]any); ok && len(join) == 2 {
			sep, _ := join[0].(string)
			parts, _ := join[1].([]any)
			var out []string
			for _, p := range parts {
				s, err := resolve(p, refs)
				if err != nil {
					return "", err
				}
				out = append(out, s)
			}
			return strings.Join(out, sep), nil
		}
	}
	return "", fmt.Errorf("cannot resolve %v", v)
}

// registerAPIRoutes reads the routes from internal/registerapi's route
// comments ("//	POST   /v1/…  register", in the package comment and
// beside each file's routes, such as vending.go's), the routes the handler
// serves.
func registerAPIRoutes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "registerapi", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^//\t(GET|POST|PUT|DELETE) +(/v1/[^\s?]+)`).FindAllStringSubmatch(string(b), -1) {
			seen[m[1]+" "+m[2]] = true
		}
	}
	routes := keys(seen)
	if len(routes) == 0 {
		t.Fatal("no routes found in internal/registerapi's route comments")
	}
	return routes
}

// The example producer policy, evaluated as IAM evaluates it against the
// ARNs API Gateway builds for real requests (apiId/stage/METHOD/path):
// every route of the policy's tenant matches, whatever the namespace or
// table; no route of another tenant does, nor one of another API, nor an
// operator's admin route (/v1/admin/…) of any tenant.
func TestProducerPolicyMatchesOnlyItsTenantsRoutes(t *testing.T) {
	s := synth(t, LakeProps{Internal: true, ExampleProducerTenant: "acme"})
	const apiID = "a1b2c3d4e5"
	apis := s.resources("AWS::ApiGatewayV2::Api")
	if len(apis) != 1 {
		t.Fatalf("got %d HTTP APIs, want 1", len(apis))
	}
	refs := map[string]string{"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012", keys(apis)[0]: apiID}

	var patterns []string
	for id, pol := range s.resources("AWS::IAM::ManagedPolicy") {
		if !strings.HasPrefix(id, "ExampleProducerPolicy") {
			continue
		}
		for _, st := range props(pol)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			res := st.(map[string]any)["Resource"]
			if list, ok := res.([]any); ok {
				for _, r := range list {
					p, err := resolve(r, refs)
					if err != nil {
						t.Fatal(err)
					}
					patterns = append(patterns, p)
				}
				continue
			}
			p, err := resolve(res, refs)
			if err != nil {
				t.Fatal(err)
			}
			patterns = append(patterns, p)
		}
	}
	if len(patterns) == 0 {
		t.Fatal("no resource in the example producer policy")
	}
	t.Logf("example producer policy resources: %q", patterns)

	var stages []string
	for _, st := range s.resources("AWS::ApiGatewayV2::Stage") {
		name, _ := props(st)["StageName"].(string)
		stages = append(stages, name)
	}
	if !slices.Equal(stages, []string{"$default"}) {
		t.Fatalf("got stages %q, want [$default]", stages)
	}
	var routeKeys []string
	for _, r := range s.resources("AWS::ApiGatewayV2::Route") {
		routeKeys = append(routeKeys, props(r)["RouteKey"].(string))
	}
	sort.Strings(routeKeys)
	if want := registerAPIRoutes(t); !slices.Equal(routeKeys, want) {
		t.Fatalf("the stack routes %q, want internal/registerapi's %q", routeKeys, want)
	}

	// requestARN is the ARN of a request to route for tenant.
	requestARN := func(api, route, tenant string) string {
		method, path, _ := strings.Cut(route, " ")
		path = strings.NewReplacer("{tenant}", tenant, "{namespace}", "sales", "{table}", "orders").Replace(path)
		return fmt.Sprintf("arn:aws:execute-api:eu-west-1:123456789012:%s/$default/%s%s", api, method, path)
	}
	allowed := func(arn string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { return iamMatch(p, arn) })
	}
	tests := []struct {
		name, api, tenant string
		want              bool
	}{
		{"its tenant", apiID, "acme", true},
		{"another tenant", apiID, "globex", false},
		{"a tenant it prefixes", apiID, "acme2", false},
		{"a tenant prefixing it", apiID, "acm", false},
		{"its tenant on another API", "zzzzzzzzzz", "acme", false},
	}
	for _, tt := range tests {
		for _, route := range routeKeys {
			t.Run(tt.name+"/"+route, func(t *testing.T) {
				arn := requestARN(tt.api, route, tt.tenant)
				want := tt.want && !strings.Contains(route, " /v1/admin/")
				if got := allowed(arn); got != want {
					t.Fatalf("policy %q allows %s: got %v, want %v", patterns, arn, got, want)
				}
			})
		}
	}
}

// The example policy's tenant goes into an IAM pattern and a URL path
// verbatim, so only a tenant that needs escaping in neither is taken.
func TestProducerResourcePathRefusesTenantsNeedingEscapes(t *testing.T) {
	tests := []struct {
		tenant string
		want   string // "" for an error
	}{
		{"acme", "/v1/tenants/acme/*"},
		{"Acme-Corp_2.eu~1", "/v1/tenants/Acme-Corp_2.eu~1/*"},
		{"", ""},
		{"*", ""},
		{"ac?me", ""},
		{"ac*", ""},
		{"${aws:username}", ""},
		{"acme/namespaces/x", ""},
		{"..", ""},
		{".", ""},
		{"ac me", ""},
		{"café", ""},
		{"ac%2Fme", ""},
	}
	for _, tt := range tests {
		t.Run(tt.tenant, func(t *testing.T) {
			got, err := ProducerResourcePath(tt.tenant)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ProducerResourcePath(%q) = %q, want an error", tt.tenant, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ProducerResourcePath(%q) = %q, %v; want %q", tt.tenant, got, err, tt.want)
			}
		})
	}
	if _, err := NewLakeStack(nil, "Lake", &LakeProps{Internal: true, ExampleProducerTenant: "a*"}); err == nil || errors.Is(err, ErrCleartextInternet) {
		t.Fatalf("NewLakeStack with producer tenant a*: got %v, want the tenant refused", err)
	}
}

// The policy variables of the reader role's attribute-based grants: the
// session's lake:bucket and lake:prefix tags, and its lake:meta-prefix tag
// in the metadata bucket.
const (
	abacBucket     = "${aws:PrincipalTag/" + tagBucket + "}"
	abacPrefix     = "${aws:PrincipalTag/" + tagPrefix + "}"
	abacMetaPrefix = "${aws:PrincipalTag/" + tagMetaPrefix + "}"
)

// readsObjects reports whether a statement's actions (Action, or
// everything but NotAction) include s3:GetObject or s3:GetObjectVersion,
// matching IAM's wildcards case-insensitively (s3:*, s3:Get*, *).
func readsObjects(m map[string]any) bool {
	matches := func(patterns []string) bool {
		for _, p := range patterns {
			for _, a := range []string{"s3:getobject", "s3:getobjectversion"} {
				if globMatch([]rune(strings.ToLower(p)), []rune(a)) {
					return true
				}
			}
		}
		return false
	}
	if not, ok := m["NotAction"]; ok {
		return !matches(asStrings(not))
	}
	return matches(asStrings(m["Action"]))
}

// unscopedDataReaders walks every IAM role and policy of the template and
// returns the roles (logical ids, sorted) granted s3:GetObject (or
// GetObjectVersion, or a wildcard covering them) on anything but lake's
// snapshot bucket without the grant being scoped by the session's tags: a
// resource in the Iceberg metadata bucket must contain
// ${aws:PrincipalTag/lake:meta-prefix} in a statement whose condition
// holds that tag to IcebergMetaPrefixShape (StringLike), and any other
// resource that is not lake's snapshot bucket must contain both
// ${aws:PrincipalTag/lake:bucket} and ${aws:PrincipalTag/lake:prefix}.
// Such a role could read tenant data with no session policy narrowing it.
//
// One grant in the metadata bucket is not a read of tenant data: the
// writer's. A statement that also grants s3:PutObject on the resource
// belongs to the role that writes the tables' metadata (the register
// function's sync): lake's own output in lake's own bucket, which it reads
// back to commit the next version, as refresh reads back the snapshot it
// writes. Tenants' files it reaches only through vended credentials.
// TestLeastPrivilege pins that only the register function writes there.
// Grants are a role's inline Policies, AWS::IAM::Policy and
// AWS::IAM::ManagedPolicy resources naming it in Roles, and managed
// policies of the template in its ManagedPolicyArns; a permissions
// boundary grants nothing and is not one. NotResource and a managed policy
// from outside the template count as unscoped.
func unscopedDataReaders(t testing.TB, raw map[string]any) []string {
	t.Helper()
	resources := raw["Resources"].(map[string]any)
	var snapshotBuckets, metadataBuckets []string
	for id, r := range resources {
		if r.(map[string]any)["Type"] != "AWS::S3::Bucket" {
			continue
		}
		switch {
		case strings.HasPrefix(id, "Snapshots"):
			snapshotBuckets = append(snapshotBuckets, `"`+id+`"`)
		case strings.HasPrefix(id, "IcebergMetadata"):
			metadataBuckets = append(metadataBuckets, `"`+id+`"`)
		}
	}
	if len(snapshotBuckets) == 0 {
		t.Fatal("no snapshot bucket in the template")
	}
	in := func(res string, ids []string) bool {
		return slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(res, id) })
	}
	// metaShaped reports whether a statement's condition holds the
	// session's lake:meta-prefix tag to the shape of one table's prefix.
	metaShaped := func(m map[string]any) bool {
		cond, _ := m["Condition"].(map[string]any)
		like, _ := cond["StringLike"].(map[string]any)
		return slices.Equal(asStrings(like["aws:PrincipalTag/"+tagMetaPrefix]), []string{IcebergMetaPrefixShape})
	}
	writes := func(m map[string]any) bool {
		return slices.ContainsFunc(asStrings(m["Action"]), func(a string) bool { return strings.EqualFold(a, "s3:PutObject") })
	}
	scoped := func(res string, m map[string]any) bool {
		switch {
		case in(res, snapshotBuckets):
			return true
		case in(res, metadataBuckets):
			// The writer's own output (see above), or a reader's grant
			// by the shape-checked lake:meta-prefix tag.
			return writes(m) || strings.Contains(res, abacMetaPrefix) && metaShaped(m)
		}
		return strings.Contains(res, abacBucket) && strings.Contains(res, abacPrefix)
	}
	// unscoped reports whether a policy document grants an unscoped read.
	unscoped := func(doc any) bool {
		d, _ := doc.(map[string]any)
		for _, st := range asAny(d["Statement"]) {
			m := st.(map[string]any)
			if m["Effect"] != "Allow" || !readsObjects(m) {
				continue
			}
			if _, ok := m["NotResource"]; ok {
				return true
			}
			for _, res := range asStrings(m["Resource"]) {
				if !scoped(res, m) {
					return true
				}
			}
		}
		return false
	}
	bad := map[string]bool{}
	refs := func(v any) []string {
		var out []string
		for _, r := range asAny(v) {
			if m, ok := r.(map[string]any); ok && m["Ref"] != nil {
				out = append(out, fmt.Sprint(m["Ref"]))
			} else {
				out = append(out, fmt.Sprint(r))
			}
		}
		return out
	}
	for id, r := range resources {
		res := r.(map[string]any)
		p := props(res)
		switch res["Type"] {
		case "AWS::IAM::Role":
			for _, pol := range asAny(p["Policies"]) {
				if unscoped(pol.(map[string]any)["PolicyDocument"]) {
					bad[id] = true
				}
			}
			for _, arn := range refs(p["ManagedPolicyArns"]) {
				pol, ok := resources[arn].(map[string]any)
				if !ok || pol["Type"] != "AWS::IAM::ManagedPolicy" || unscoped(props(pol)["PolicyDocument"]) {
					bad[id] = true
				}
			}
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy":
			if unscoped(p["PolicyDocument"]) {
				for _, role := range refs(p["Roles"]) {
					bad[role] = true
				}
			}
		}
	}
	return keys(bad)
}

// unscopedDataReaders finds a role granted reads beyond the snapshot bucket
// that its session's tags do not scope, however the grant reaches it, and
// passes the reader's attribute-based grants (in the metadata bucket only
// by a shape-checked lake:meta-prefix), the snapshot reads, the metadata
// writer's read-back and a permissions boundary.
func TestUnscopedDataReaders(t *testing.T) {
	doc := func(effect, action any, res ...any) map[string]any {
		return map[string]any{"Statement": []any{map[string]any{"Effect": effect, "Action": action, "Resource": res}}}
	}
	withCondition := func(d map[string]any, cond map[string]any) map[string]any {
		d["Statement"].([]any)[0].(map[string]any)["Condition"] = cond
		return d
	}
	metaObjects := func(rest string) any {
		return map[string]any{"Fn::Join": []any{"", []any{map[string]any{"Fn::GetAtt": []any{"IcebergMetadata8B2A1C3D", "Arn"}}, rest}}}
	}
	shaped := map[string]any{"StringLike": map[string]any{"aws:PrincipalTag/" + tagMetaPrefix: IcebergMetaPrefixShape}}
	loose := map[string]any{"StringLike": map[string]any{"aws:PrincipalTag/" + tagMetaPrefix: "tables/*"}}
	snapshot := map[string]any{"Fn::Join": []any{"", []any{map[string]any{"Fn::GetAtt": []any{"SnapshotsD03D071C", "Arn"}}, "/snapshots/*"}}}
	abac := "arn:aws:s3:::" + abacBucket + "/" + abacPrefix + "*"
	role := func(p map[string]any) map[string]any {
		return map[string]any{"Type": "AWS::IAM::Role", "Properties": p}
	}
	policy := func(typ string, d map[string]any, roles ...string) map[string]any {
		var rs []any
		for _, r := range roles {
			rs = append(rs, map[string]any{"Ref": r})
		}
		return map[string]any{"Type": typ, "Properties": map[string]any{"PolicyDocument": d, "Roles": rs}}
	}
	raw := map[string]any{"Resources": map[string]any{
		"SnapshotsD03D071C": map[string]any{"Type": "AWS::S3::Bucket"},
		"Inline":            role(map[string]any{"Policies": []any{map[string]any{"PolicyDocument": doc("Allow", "s3:*", "*")}}}),
		"Attached":          role(map[string]any{"ManagedPolicyArns": []any{map[string]any{"Ref": "Broad"}}}),
		"Broad":             policy("AWS::IAM::ManagedPolicy", doc("Allow", "s3:GetObject", "arn:aws:s3:::acme-data/*")),
		"ByPolicy":          role(nil),
		"Wild":              policy("AWS::IAM::Policy", doc("Allow", "S3:Get*", abac, "arn:aws:s3:::acme-data/"+abacPrefix+"*"), "ByPolicy"),
		"Outside":           role(map[string]any{"ManagedPolicyArns": []any{"arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"}}),
		"Reader":            role(map[string]any{"PermissionsBoundary": map[string]any{"Ref": "Boundary"}}),
		"Boundary":          policy("AWS::IAM::ManagedPolicy", doc("Allow", "s3:GetObject", "arn:aws:s3:::acme-data/*")),
		"ReaderPolicy":      policy("AWS::IAM::Policy", doc("Allow", "s3:GetObjectVersion", abac), "Reader"),
		"Snapshot":          role(nil),
		"SnapshotPolicy":    policy("AWS::IAM::Policy", doc("Allow", "s3:GetObject", snapshot), "Snapshot"),
		"Denier":            role(nil),
		"DenyPolicy":        policy("AWS::IAM::Policy", doc("Deny", "s3:*", "*"), "Denier"),
		"Writer":            role(nil),
		"WritePolicy":       policy("AWS::IAM::Policy", doc("Allow", "s3:PutObject", "*"), "Writer"),
		// The metadata bucket.
		"IcebergMetadata8B2A1C3D": map[string]any{"Type": "AWS::S3::Bucket"},
		"MetaReader":              role(nil),
		"MetaReaderPolicy": policy("AWS::IAM::Policy",
			withCondition(doc("Allow", []any{"s3:GetObject", "s3:GetObjectVersion"}, metaObjects("/"+abacMetaPrefix+"*")), shaped), "MetaReader"),
		"MetaUnshaped":       role(nil),
		"MetaUnshapedPolicy": policy("AWS::IAM::Policy", doc("Allow", "s3:GetObject", metaObjects("/"+abacMetaPrefix+"*")), "MetaUnshaped"),
		"MetaLoose":          role(nil),
		"MetaLoosePolicy":    policy("AWS::IAM::Policy", withCondition(doc("Allow", "s3:GetObject", metaObjects("/"+abacMetaPrefix+"*")), loose), "MetaLoose"),
		"MetaBroad":          role(nil),
		"MetaBroadPolicy":    policy("AWS::IAM::Policy", withCondition(doc("Allow", "s3:GetObject", metaObjects("/tables/*")), shaped), "MetaBroad"),
		"MetaWriter":         role(nil),
		"MetaWriterPolicy":   policy("AWS::IAM::Policy", doc("Allow", []any{"s3:GetObject", "s3:PutObject"}, metaObjects("/tables/*")), "MetaWriter"),
		// lake:meta-prefix names a prefix of the metadata bucket only:
		// in a data bucket it scopes nothing.
		"MetaTagElsewhere": role(nil),
		"MetaTagElsewherePolicy": policy("AWS::IAM::Policy",
			withCondition(doc("Allow", "s3:GetObject", "arn:aws:s3:::acme-data/"+abacMetaPrefix+"*"), shaped), "MetaTagElsewhere"),
	}}
	got := unscopedDataReaders(t, raw)
	if want := []string{"Attached", "ByPolicy", "Inline", "MetaBroad", "MetaLoose", "MetaTagElsewhere", "MetaUnshaped", "Outside"}; !slices.Equal(got, want) {
		t.Fatalf("unscopedDataReaders = %v, want %v", got, want)
	}
}
