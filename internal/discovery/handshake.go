package discovery

import (
	"context"
	"encoding/base64"
	"log/slog"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
)

// Handshake. Flight's Handshake is how clients with a user + password form
// log in: arrow-go's Client.AuthenticateBasicToken and arrow-java's
// FlightClient.authenticateBasicToken (the JDBC driver's user= and
// password=, Grafana's username/password fields) send
// "authorization: Basic base64(user:password)" on the Handshake call and
// read a bearer token from the response's "authorization" header (arrow-java
// through ClientIncomingAuthHeaderMiddleware), which they then send on
// every later call.
//
// Lake has no passwords: the password is a lake token (the JWT), and the
// username must be the token's tenant. A Handshake answers:
//   - Basic, password a valid token, username its tenant: OK, with
//     "authorization: Bearer <the token>" in the response header;
//   - Basic, password a valid token of another tenant than the username:
//     UNAUTHENTICATED, saying the username must be the token's tenant;
//   - Basic, password not a valid token (or a malformed header):
//     UNAUTHENTICATED;
//   - Bearer, a valid token: OK, the same header echoed (the JDBC driver's
//     token= form, and any client that handshakes before its calls);
//   - anything else: UNAUTHENTICATED.
//
// Every other call takes the same Basic header the same way (arrow-go's
// database/sql driver with a user:password DSN, and arrow-java's call-header
// authenticator, send it on every call and never handshake): the same
// checks and answers, and the bearer token in the response header. A Bearer
// call is answered with no header. The tenant still comes only from the
// validated token.

const handshakeMethod = "/arrow.flight.protocol.FlightService/Handshake"

// errBadPassword is the answer to a Basic Handshake whose password is not a
// valid lake token.
var errBadPassword = status.Error(codes.Unauthenticated,
	"unauthenticated: the password must be a valid lake token (the JWT `lake token` prints)")

// basicCredentials decodes a "Basic base64(user:password)" header value,
// in standard or unpadded base64 (arrow-go sends it unpadded).
func basicCredentials(header string) (user, password string, ok bool) {
	scheme, cred, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "basic") {
		return "", "", false
	}
	cred = strings.TrimSpace(cred)
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(cred); err != nil {
			return "", "", false
		}
	}
	return strings.Cut(string(raw), ":")
}

// basicTenant checks Basic credentials as every call takes them: the
// password must be a valid lake token and the username its tenant. It
// returns the tenant, or an UNAUTHENTICATED status saying which check
// failed (the reason logged, what the method was).
func (a *calls) basicTenant(ctx context.Context, what, user, password string) (string, error) {
	tenant, err := a.authn.Tenant(password)
	if err != nil {
		a.reject(ctx, what, err)
		return "", errBadPassword
	}
	if user != tenant {
		a.log.InfoContext(ctx, "flight sql request rejected", slog.String("method", what),
			slog.String("reason", "username is not the token's tenant"))
		return "", status.Errorf(codes.Unauthenticated,
			"unauthenticated: the username must be the token's tenant: this token is for %s, not %s",
			strconv.Quote(tenant), strconv.Quote(user))
	}
	return tenant, nil
}

// handshake authenticates a Handshake call (see above) and, on success,
// runs the handler with the tenant in its context and the bearer header set
// on the response.
func (a *calls) handshake(srv any, ss *tenantStream, h grpc.StreamHandler) error {
	ctx := ss.ctx
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) != 1 {
		return status.Error(codes.Unauthenticated, "unauthenticated: send a bearer token, or a username and password (the password a lake token)")
	}
	var token, tenant string
	if user, password, ok := basicCredentials(vals[0]); ok {
		t, err := a.basicTenant(ctx, "basic handshake", user, password)
		if err != nil {
			return err
		}
		token, tenant = password, t
	} else {
		t, _ := auth.BearerToken(vals[0])
		var err error
		if tenant, err = a.authn.Tenant(t); err != nil {
			a.reject(ctx, "bearer handshake", err)
			return status.Error(codes.Unauthenticated, "unauthenticated: send a valid bearer token, or a username and password (the password a lake token)")
		}
		token = t
	}
	if err := ss.SetHeader(bearerHeader(token)); err != nil {
		return err
	}
	ss.ctx = WithTenant(ctx, tenant)
	return h(srv, ss)
}

// bearerHeader is the response header that answers Basic credentials: the
// bearer token a client sends on its later calls.
func bearerHeader(token string) metadata.MD {
	return metadata.Pairs("authorization", "Bearer "+token)
}

func (a *calls) reject(ctx context.Context, what string, err error) {
	a.log.InfoContext(ctx, "flight sql request rejected", slog.String("method", what), slog.String("reason", err.Error()))
}
