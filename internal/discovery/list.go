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
)

// ListTablesActionType is the Flight action (DoAction) that answers one page
// of the caller's tenant's tables, in (namespace, name) order, all of them
// or one namespace's: a body {"namespace","offset","limit"} (JSON
// ListRequest), one Result, a JSON TablePage. Discovery reads only the
// page's rows of the tenant's prepared state, so a page of a tenant of
// many thousands of tables costs and carries a page, which GetTables (no
// offset or limit in Flight SQL) cannot do. The catalog browser pages with
// it.
const ListTablesActionType = "lake.list_tables"

// ListNamespacesActionType is the Flight action (DoAction) that answers one
// page of the caller's tenant's namespaces, sorted, each with its number
// of tables: a body {"offset","limit"} (JSON ListRequest, no namespace),
// one Result, a JSON NamespacePage.
const ListNamespacesActionType = "lake.list_namespaces"

// MaxListLimit is the most rows a list action answers per page.
const MaxListLimit = 500

// MaxListedDescription bounds a listed table's description: the first
// MaxListedDescription bytes, cut at a character boundary (Truncated says
// so); lake.describe answers it whole.
const MaxListedDescription = 240

// maxListBody bounds a list action's body: a namespace escaped at most six
// bytes to a byte, two numbers, and the keys.
const maxListBody = 6*catalog.MaxNameBytes + 256

// ListRequest is the body of a list action. Limit is 1 to MaxListLimit;
// Namespace, for ListTablesActionType only, picks one namespace (empty:
// every namespace).
type ListRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Offset    int    `json:"offset"`
	Limit     int    `json:"limit"`
}

// ListedTable is one table of a TablePage.
type ListedTable struct {
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	TableType string `json:"table_type"`
	// Columns is the number of top-level columns; -1 when the table's
	// schema is unavailable (a legacy registration).
	Columns int `json:"columns"`
	// Description is the registration's, at most MaxListedDescription
	// bytes; DescriptionTruncated is set when it was cut.
	Description          string `json:"description,omitempty"`
	DescriptionTruncated bool   `json:"description_truncated,omitempty"`
}

// TablePage is the answer of ListTablesActionType: the caller's Tenant,
// Total tables matched, Tables from Offset on.
type TablePage struct {
	Tenant string        `json:"tenant"`
	Total  int           `json:"total"`
	Tables []ListedTable `json:"tables"`
}

// ListedNamespace is one namespace of a NamespacePage.
type ListedNamespace struct {
	Name   string `json:"name"`
	Tables int    `json:"tables"`
}

// NamespacePage is the answer of ListNamespacesActionType: the caller's
// Tenant, Total namespaces, Namespaces from Offset on.
type NamespacePage struct {
	Tenant     string            `json:"tenant"`
	Total      int               `json:"total"`
	Namespaces []ListedNamespace `json:"namespaces"`
}

const listTablesActionDescription = `One page of the caller's tenant's tables in (namespace, name) order: body {"namespace" (optional),"offset","limit" (1–500)}; ` +
	`one Result, JSON {"tenant","total","tables":[{"namespace","table","table_type","columns","description","description_truncated"}]}`

const listNamespacesActionDescription = `One page of the caller's tenant's namespaces: body {"offset","limit" (1–500)}; ` +
	`one Result, JSON {"tenant","total","namespaces":[{"name","tables"}]}`

// parseList decodes and checks a list body. Any failure is
// INVALID_ARGUMENT.
func parseList(action string, body []byte, namespaceAllowed bool) (ListRequest, error) {
	var req ListRequest
	if len(body) > maxListBody {
		return req, status.Errorf(codes.InvalidArgument, "%s: body is %d bytes, at most %d", action, len(body), maxListBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, status.Errorf(codes.InvalidArgument, "%s: body is not a list request: %v", action, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, status.Errorf(codes.InvalidArgument, "%s: body has data after the request", action)
	}
	if req.Offset < 0 || req.Limit < 1 || req.Limit > MaxListLimit {
		return req, status.Errorf(codes.InvalidArgument, "%s: offset must be ≥ 0 and limit from 1 to %d", action, MaxListLimit)
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

// listTables answers ListTablesActionType for the tenant in ctx: the rows
// of the page alone are read, each distinct schema among them decoded once
// to count its columns.
func (s *Service) listTables(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, err := parseList(ListTablesActionType, body, true)
	if err != nil {
		return nil, err
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	page := TablePage{Tenant: tenant, Tables: []ListedTable{}}
	if ts != nil {
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
			t := ListedTable{Namespace: c.Namespace.Value(i), Table: c.Name.Value(i), TableType: c.TableType.Value(i), Columns: -1}
			t.Description, t.DescriptionTruncated = cut(c.Description.Value(i), MaxListedDescription)
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
	}
	return marshalList(page)
}

// listNamespaces answers ListNamespacesActionType for the tenant in ctx
// from the prepared namespace index.
func (s *Service) listNamespaces(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, err := parseList(ListNamespacesActionType, body, false)
	if err != nil {
		return nil, err
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	page := NamespacePage{Tenant: tenant, Namespaces: []ListedNamespace{}}
	if ts != nil {
		page.Total = len(ts.namespaces)
		for k := min(req.Offset, page.Total); k < page.Total && len(page.Namespaces) < req.Limit; k++ {
			page.Namespaces = append(page.Namespaces, ListedNamespace{Name: ts.namespaces[k], Tables: ts.nsSpan[k].hi - ts.nsSpan[k].lo})
		}
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
