package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// listTablesActionDescription and listNamespacesActionDescription are what
// ListActions says of the list actions.
const listTablesActionDescription = `One page of the caller's tenant's tables in (namespace, name) order: body {"namespace" (optional),"offset","limit" (1–500)}; ` +
	`one Result, JSON {"tenant","total","tables":[{"namespace","table","table_type","columns","description","description_truncated"}]}`

const listNamespacesActionDescription = `One page of the caller's tenant's namespaces: body {"offset","limit" (1–500)}; ` +
	`one Result, JSON {"tenant","total","namespaces":[{"name","tables"}]}`

// parseList decodes and checks a list body. Any failure is
// INVALID_ARGUMENT.
func parseList(action string, body []byte, namespaceAllowed bool) (wire.ListRequest, error) {
	var req wire.ListRequest
	if len(body) > wire.MaxListBody {
		return req, status.Errorf(codes.InvalidArgument, "%s: body is %d bytes, at most %d", action, len(body), wire.MaxListBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, status.Errorf(codes.InvalidArgument, "%s: body is not a list request: %v", action, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, status.Errorf(codes.InvalidArgument, "%s: body has data after the request", action)
	}
	if req.Offset < 0 || req.Limit < 1 || req.Limit > wire.MaxListLimit {
		return req, status.Errorf(codes.InvalidArgument, "%s: offset must be ≥ 0 and limit from 1 to %d", action, wire.MaxListLimit)
	}
	if req.Namespace != "" {
		if !namespaceAllowed {
			return req, status.Errorf(codes.InvalidArgument, "%s: takes no namespace", action)
		}
		if err := catalog.ValidateName("namespace", req.Namespace); err != nil {
			return req, status.Errorf(codes.InvalidArgument, "%s: %v", action, err)
		}
	}
	return req, nil
}

// listTables answers wire.ListTablesActionType for the tenant in ctx: the rows
// of the page alone are read, each distinct schema among them decoded once
// to count its columns.
func (s *Service) listTables(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, err := parseList(wire.ListTablesActionType, body, true)
	if err != nil {
		return nil, err
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	page := wire.TablePage{Tenant: tenant, Tables: []wire.ListedTable{}}
	span := rowRange{0, ts.n}
	if req.Namespace != "" {
		span = rowRange{}
		if k, ok := slices.BinarySearch(ts.namespaces, req.Namespace); ok {
			span = ts.nsSpan[k]
		}
	}
	page.Total = span.hi - span.lo
	columns := map[int32]int{}
	for i := span.lo + min(req.Offset, page.Total); i < span.hi && len(page.Tables) < req.Limit; i++ {
		c := ts.cols
		t := wire.ListedTable{Namespace: c.Namespace.Value(i), Table: c.Name.Value(i), TableType: c.TableType.Value(i), Columns: -1}
		t.Description, t.DescriptionTruncated = cut(c.Description.Value(i), wire.MaxListedDescription)
		if !c.SchemaRef.IsNull(i) {
			ref := c.SchemaRef.Value(i)
			n, ok := columns[ref]
			if !ok {
				sc, err := catalog.DecodeSchema(c.Schemas.Value(int(ref)))
				if err != nil {
					s.opts.Log.ErrorContext(ctx, "list: stored schema does not decode", slog.String("error", err.Error()))
					return nil, status.Error(codes.Internal, "list: a stored schema is unreadable")
				}
				n = sc.NumFields()
				columns[ref] = n
			}
			t.Columns = n
		}
		page.Tables = append(page.Tables, t)
	}
	return marshalList(page)
}

// listNamespaces answers wire.ListNamespacesActionType for the tenant in ctx
// from the prepared namespace index.
func (s *Service) listNamespaces(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, err := parseList(wire.ListNamespacesActionType, body, false)
	if err != nil {
		return nil, err
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	page := wire.NamespacePage{Tenant: tenant, Namespaces: []wire.ListedNamespace{}}
	page.Total = len(ts.namespaces)
	for k := min(req.Offset, page.Total); k < page.Total && len(page.Namespaces) < req.Limit; k++ {
		page.Namespaces = append(page.Namespaces, wire.ListedNamespace{Name: ts.namespaces[k], Tables: ts.nsSpan[k].hi - ts.nsSpan[k].lo})
	}
	return marshalList(page)
}

func marshalList(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "list: encode: %v", err)
	}
	return b, nil
}

// cut is s's first n bytes at most, ending on a character boundary, and
// whether anything was cut.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
