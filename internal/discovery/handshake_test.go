package discovery_test

import (
	"context"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/discovery"
)

// rawHandshake runs a Handshake with authorization header value authz (none
// when empty) and returns the response's authorization header.
func (e *env) rawHandshake(t *testing.T, authz string) (string, error) {
	t.Helper()
	ctx := context.Background()
	if authz != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authz)
	}
	stream, err := e.client.Client.Handshake(ctx)
	if err != nil {
		return "", err
	}
	if err := stream.CloseSend(); err != nil {
		return "", err
	}
	if _, err := stream.Recv(); err != nil && err != io.EOF {
		return "", err
	}
	header, err := stream.Header()
	if err != nil {
		return "", err
	}
	return strings.Join(header.Get("authorization"), ","), nil
}

// TestHandshake: a Basic-auth Handshake whose password is a lake token and
// whose username is its tenant answers the bearer token in the response
// header, which arrow-go's AuthenticateBasicToken then sends on every call;
// a Bearer Handshake keeps working; everything else is UNAUTHENTICATED.
func TestHandshake(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.register("globex", "hr", "secret", wide(2))
	e.publish()
	tok := token(t, "acme")

	t.Run("basic via arrow-go AuthenticateBasicToken", func(t *testing.T) {
		ctx, err := e.client.Client.AuthenticateBasicToken(context.Background(), "acme", tok)
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err := e.fetch(ctx)(e.client.GetCatalogs(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if got := columnValues(recs, 0); got != "acme" {
			t.Errorf("GetCatalogs after the handshake = %q, want %q", got, "acme")
		}
	})

	basic := func(enc *base64.Encoding, user, password string) string {
		return "Basic " + enc.EncodeToString([]byte(user+":"+password))
	}
	tests := []struct {
		name     string
		authz    string
		wantCode codes.Code
		wantMsg  string // in the error, or the response header on success
	}{
		{"basic, padded (arrow-java)", basic(base64.StdEncoding, "acme", tok), codes.OK, "Bearer " + tok},
		{"basic, unpadded (arrow-go)", basic(base64.RawStdEncoding, "acme", tok), codes.OK, "Bearer " + tok},
		{"bearer", "Bearer " + tok, codes.OK, "Bearer " + tok},
		{"username not the tenant", basic(base64.StdEncoding, "globex", tok), codes.Unauthenticated, `the username must be the token's tenant: this token is for "acme", not "globex"`},
		{"bad password", basic(base64.StdEncoding, "acme", "not-a-token"), codes.Unauthenticated, "the password must be a valid lake token"},
		{"token signed with another key", basic(base64.StdEncoding, "acme", tok[:len(tok)-4]+"AAAA"), codes.Unauthenticated, "the password must be a valid lake token"},
		{"no colon", "Basic " + base64.StdEncoding.EncodeToString([]byte("acme")), codes.Unauthenticated, "unauthenticated"},
		{"not base64", "Basic !!!", codes.Unauthenticated, "unauthenticated"},
		{"bad bearer", "Bearer nope", codes.Unauthenticated, "unauthenticated"},
		{"no header", "", codes.Unauthenticated, "unauthenticated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := e.rawHandshake(t, tt.authz)
			if code := codeOf(err); code != tt.wantCode {
				t.Fatalf("Handshake: %v, want %v", err, tt.wantCode)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("error %q, want it to say %q", err, tt.wantMsg)
				}
				return
			}
			if got != tt.wantMsg {
				t.Errorf("response authorization = %q, want %q", got, tt.wantMsg)
			}
		})
	}
}
