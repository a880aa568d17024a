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

// registerAPIRoutes reads the routes from internal/registerapi's package
// comment ("//	POST   /v1/…  register"), the routes the handler serves.
func registerAPIRoutes(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "registerapi", "registerapi.go"))
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, m := range regexp.MustCompile(`(?m)^//\t(GET|POST|PUT|DELETE) +(/v1/\S+)`).FindAllStringSubmatch(string(b), -1) {
		routes = append(routes, m[1]+" "+m[2])
	}
	sort.Strings(routes)
	if len(routes) == 0 {
		t.Fatal("no routes found in internal/registerapi/registerapi.go's package comment")
	}
	return routes
}

// The example producer policy, evaluated as IAM evaluates it against the
// ARNs API Gateway builds for real requests (apiId/stage/METHOD/path):
// every route of the policy's tenant matches, whatever the namespace or
// table; no route of another tenant does, nor one of another API.
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
				if got := allowed(arn); got != tt.want {
					t.Fatalf("policy %q allows %s: got %v, want %v", patterns, arn, got, tt.want)
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
