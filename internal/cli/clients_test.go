package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

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
	// Re-sign the first request as received, at its own date: with the body
	// it carried the signature must match, with another body it must not.
	auth0 := got[0].Header.Get("Authorization")
	signed := strings.Split(strings.SplitN(strings.SplitN(auth0, "SignedHeaders=", 2)[1], ",", 2)[0], ";")
	resign := func(body string) string {
		r, err := http.NewRequest(got[0].Method, "http://"+got[0].Host+got[0].URL.RequestURI(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range signed {
			if h != "host" && h != "content-length" {
				r.Header.Set(h, got[0].Header.Get(h))
			}
		}
		date, err := time.Parse("20060102T150405Z", got[0].Header.Get("X-Amz-Date"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(body))
		creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "execute-api", "eu-west-1", date); err != nil {
			t.Fatal(err)
		}
		a := r.Header.Get("Authorization")
		return a[strings.Index(a, "Signature="):]
	}
	if resign(bodies[0]) != sigs[0] {
		t.Fatal("the signature does not verify against the body that was sent")
	}
	if resign(bodies[1]) == sigs[0] {
		t.Fatal("the signature verifies against another body: the payload is not signed")
	}
}
