package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// With --sigv4 the registration API calls are signed for execute-api with
// the caller's AWS credentials, the body included in the signature.
func TestSigV4Signing(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	var got []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, bodies = append(got, r.Clone(context.Background())), append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"tenant":"acme","namespace":"sales","name":"orders","version":1}`))
	}))
	defer srv.Close()
	c, err := newAPIClient(context.Background(), srv.URL, "", true)
	if err != nil {
		t.Fatal(err)
	}
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	for _, ipc := range [][]byte{{1, 2, 3}, {4, 5, 6}} {
		if _, _, err := c.register(context.Background(), ref, "s3://b/o", "TABLE", ipc); err != nil {
			t.Fatal(err)
		}
	}
	var sigs []string
	for _, r := range got {
		a := r.Header.Get("Authorization")
		if !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(a, "/eu-west-1/execute-api/aws4_request") {
			t.Fatalf("Authorization = %q, want a SigV4 signature for execute-api in eu-west-1", a)
		}
		if !strings.Contains(a, "SignedHeaders=") || !strings.Contains(a, "host") || !strings.Contains(a, "x-amz-date") || r.Header.Get("X-Amz-Date") == "" {
			t.Fatalf("Authorization %q does not sign host and x-amz-date", a)
		}
		sigs = append(sigs, a[strings.Index(a, "Signature="):])
	}
	if sigs[0] == sigs[1] || bodies[0] == bodies[1] {
		t.Fatal("two different bodies got the same signature: the payload is not signed")
	}
}
