package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

const credentialsActionDescription = `Access to one of the caller's tables' files: body {"namespace","table"}; one Result, JSON ` +
	`{"tenant","namespace","table","location","access" ("vended" or "path"),"access_key_id","secret_access_key","session_token","expiration","region","note"}`

// maxCredentialsBody bounds a lake.credentials body: two names.
const maxCredentialsBody = 4 * catalog.MaxNameBytes

// credentials answers wire.CredentialsActionType for the tenant in ctx:
// the table's location from its prepared state, the tenant's allowed
// prefixes from its segment (catalog.TenantSettings, published by refresh),
// the table's Iceberg metadata prefix when lake has synced its current
// registration (issue 41: an engine reads the metadata-location loadTable
// answers with these credentials), and the answer of Options.Door
// (vending.Door: the registration API's GET …/credentials answers through
// the same code). A location outside the allowed prefixes is
// PERMISSION_DENIED naming the reason; a discovery without vending
// UNIMPLEMENTED; an STS refusal or failure UNAVAILABLE.
// The STS call it may make is the only I/O a Flight call does, and the
// Door caches its answer until shortly before it expires.
func (s *Service) credentials(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	var req wire.CredentialsRequest
	if len(body) > maxCredentialsBody {
		return nil, status.Errorf(codes.InvalidArgument, "credentials: body of %d bytes, limit %d", len(body), maxCredentialsBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, `credentials: body is not {"namespace","table"}: %v`, err)
	}
	for _, n := range [][2]string{{"namespace", req.Namespace}, {"table", req.Table}} {
		if err := catalog.ValidateName(n[0], n[1]); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "credentials: %v", err)
		}
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	i, ok := ts.find(req.Namespace, req.Table)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "credentials: no table %s.%s", req.Namespace, req.Table)
	}
	if s.opts.Door == nil {
		return nil, status.Errorf(codes.Unimplemented, "credentials: %v on this discovery service (no data-reader role)", vending.ErrNotConfigured)
	}
	who := "flight:" + tenant
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		who += "@" + p.Addr.String()
	}
	creds, err := s.opts.Door.Credentials(ctx, vending.TableRequest{Who: who, Tenant: tenant, Namespace: req.Namespace, Table: req.Table,
		Location: ts.cols.Location.Value(i), Allowed: ts.settings().AllowedPrefixes, Metadata: icebergSource{s}.metadataPrefix(ctx, ts, i)})
	if err != nil {
		switch vending.Code(err) {
		case wire.CodeLocationNotAllowed:
			return nil, status.Errorf(codes.PermissionDenied, "credentials: %s.%s: %v", req.Namespace, req.Table, err)
		case wire.CodeVendingNotConfigured:
			return nil, status.Errorf(codes.Unimplemented, "credentials: %s.%s: %v", req.Namespace, req.Table, err)
		}
		s.opts.Log.ErrorContext(ctx, "credentials: vending failed", slog.String("tenant", tenant), slog.String("table", req.Namespace+"."+req.Table),
			slog.String("error", err.Error()))
		return nil, status.Errorf(codes.Unavailable, "credentials: %s.%s: STS refused or failed the AssumeRole of the data-reader role; retry, or see the server's log", req.Namespace, req.Table)
	}
	b, err := json.Marshal(creds)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "credentials: encode: %v", err)
	}
	return b, nil
}
