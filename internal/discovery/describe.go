package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// DescribeActionType is the Flight action (DoAction) that describes one
// table of the caller's tenant. Its body is a JSON DescribeRequest; its
// answer is one Result, a JSON TableDescription.
//
// Like every other answer it comes from the snapshot in memory, for the
// tenant of the bearer token alone: a table the tenant does not have is
// NOT_FOUND, whoever else has one of that name. A body that is not a
// DescribeRequest with two valid names is INVALID_ARGUMENT; no token is
// UNAUTHENTICATED; before the first snapshot it is UNAVAILABLE.
const DescribeActionType = "lake.describe"

// MaxDescribeBody bounds a describe action's body: two names of
// catalog.MaxNameBytes, each escaped at most six bytes to a byte, and the
// keys.
const MaxDescribeBody = 12*catalog.MaxNameBytes + 256

// DescribeRequest is the body of a DescribeActionType action. Both names
// are required.
type DescribeRequest struct {
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
}

// TableDescription is the answer of a describe action: what the snapshot
// holds of one table besides its schema.
type TableDescription struct {
	Namespace string    `json:"namespace"`
	Table     string    `json:"table"`
	TableType string    `json:"table_type"`
	Location  string    `json:"location"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Description and Properties are the registration's, left out when it
	// has none.
	Description string            `json:"description,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	// HasSchema reports whether the table's schema is available.
	HasSchema bool `json:"has_schema"`
}

// describeActionDescription is what ListActions says of the describe action.
const describeActionDescription = `Describe one table of the caller's tenant: body {"namespace","table"}; ` +
	`one Result, JSON {"namespace","table","table_type","location","version","created_at","updated_at","description","properties","has_schema"}`

// parseDescribe decodes and checks a describe body. Any failure is
// INVALID_ARGUMENT.
func parseDescribe(body []byte) (DescribeRequest, error) {
	var req DescribeRequest
	if len(body) > MaxDescribeBody {
		return req, status.Errorf(codes.InvalidArgument, "describe: body is %d bytes, at most %d", len(body), MaxDescribeBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, status.Errorf(codes.InvalidArgument, "describe: body is not a describe request: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, status.Error(codes.InvalidArgument, "describe: body has data after the request")
	}
	if err := catalog.ValidateName("namespace", req.Namespace); err != nil {
		return req, status.Errorf(codes.InvalidArgument, "describe: %v", err)
	}
	if err := catalog.ValidateName("table", req.Table); err != nil {
		return req, status.Errorf(codes.InvalidArgument, "describe: %v", err)
	}
	return req, nil
}

// describe answers a describe action for the tenant in ctx.
func (s *Service) describe(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, err := parseDescribe(body)
	if err != nil {
		return nil, err
	}
	t, ok, err := v.index.table(tenant, req.Namespace, req.Table)
	switch {
	case err != nil:
		s.opts.Log.ErrorContext(ctx, "describe: tenant segment does not decode", slog.Uint64("generation", v.Generation), slog.String("error", err.Error()))
		return nil, status.Error(codes.Internal, "this catalog's snapshot segment is unreadable; a newer snapshot will replace it")
	case !ok:
		return nil, status.Errorf(codes.NotFound, "describe: no table %s.%s", req.Namespace, req.Table)
	}
	b, err := json.Marshal(TableDescription{
		Namespace: t.Ref.Namespace, Table: t.Ref.Name, TableType: t.TableType,
		Location: t.Location, Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Description: t.Description, Properties: t.Properties, HasSchema: t.HasSchema(),
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "describe: encode: %v", err)
	}
	return b, nil
}

// errFound stops a segment walk at the table looked for.
var errFound = errors.New("found")

func (x blobIndex) table(tenant, namespace, name string) (catalog.Table, bool, error) {
	if _, ok := x.blob.Tenant(tenant); !ok {
		return catalog.Table{}, false, nil
	}
	var out catalog.Table
	err := x.blob.VisitTenant(tenant, func(t *catalog.Table) error {
		if t.Ref.Namespace != namespace || t.Ref.Name != name {
			return nil
		}
		// The row points into the decoded segment: copy what is kept.
		out = catalog.Table{
			Ref:       catalog.TableRef{Tenant: tenant, Namespace: namespace, Name: name},
			Location:  strings.Clone(t.Location),
			TableType: strings.Clone(t.TableType),
			Version:   t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
			SchemaIPC:   bytes.Clone(t.SchemaIPC),
			Description: strings.Clone(t.Description),
		}
		if len(t.Properties) > 0 {
			out.Properties = make(map[string]string, len(t.Properties))
			for k, v := range t.Properties {
				out.Properties[strings.Clone(k)] = strings.Clone(v)
			}
		}
		return errFound
	})
	switch {
	case errors.Is(err, errFound):
		return out, true, nil
	case err != nil:
		return catalog.Table{}, false, err
	}
	return catalog.Table{}, false, nil
}
