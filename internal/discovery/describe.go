package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// describeActionDescription is what ListActions says of the describe action.
const describeActionDescription = `Describe one table of the caller's tenant: body {"namespace","table"}; ` +
	`one Result, JSON {"namespace","table","table_type","location","version","created_at","updated_at","description","properties","has_schema"}`

// parseDescribe decodes and checks a describe body. Any failure is
// INVALID_ARGUMENT.
func parseDescribe(body []byte) (wire.DescribeRequest, error) {
	var req wire.DescribeRequest
	if len(body) > wire.MaxDescribeBody {
		return req, status.Errorf(codes.InvalidArgument, "describe: body is %d bytes, at most %d", len(body), wire.MaxDescribeBody)
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

// describe answers a describe action for the tenant in ctx from its
// prepared state (the cache): a binary search for the row, and only
// that row is read. Nothing is decompressed or decoded per call.
func (s *Service) describe(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, err := parseDescribe(body)
	if err != nil {
		return nil, err
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	i, ok := ts.find(req.Namespace, req.Table)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "describe: no table %s.%s", req.Namespace, req.Table)
	}
	c := ts.cols
	a := wire.TableDescription{
		Namespace: c.Namespace.Value(i), Table: c.Name.Value(i), TableType: c.TableType.Value(i),
		Location: c.Location.Value(i), Version: c.Version.Value(i),
		CreatedAt: c.CreatedAt.Value(i).ToTime(arrow.Microsecond).UTC(), UpdatedAt: c.UpdatedAt.Value(i).ToTime(arrow.Microsecond).UTC(),
		Description: c.Description.Value(i), Properties: ts.properties(i), HasSchema: !c.SchemaRef.IsNull(i),
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "describe: encode: %v", err)
	}
	return b, nil
}
