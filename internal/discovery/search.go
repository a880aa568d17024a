package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/arrowtype"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/like"
	"github.com/lake-catalog/lake/pkg/wire"
)

// searchActionDescription is what ListActions says of the search action.
const searchActionDescription = `Search the caller's tenant: body {"table_pattern": LIKE, "column_pattern": LIKE}; ` +
	`each Result is one JSON match {"namespace","table","table_type","columns":[{"path","type","nullable"}]}`

// DoAction answers the search, describe, list and dropped actions and passes every other
// action to the Flight SQL server.
func (f *flightServer) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	switch a.GetType() {
	case wire.SearchActionType:
		return f.svc.search(stream.Context(), a.GetBody(), func(body []byte) error {
			return stream.Send(&flight.Result{Body: body})
		})
	case wire.DescribeActionType:
		body, err := f.svc.describe(stream.Context(), a.GetBody())
		if err != nil {
			return err
		}
		return stream.Send(&flight.Result{Body: body})
	case wire.CredentialsActionType:
		body, err := f.svc.credentials(stream.Context(), a.GetBody())
		if err != nil {
			return err
		}
		return stream.Send(&flight.Result{Body: body})
	case wire.ListTablesActionType, wire.ListNamespacesActionType, wire.DroppedActionType, wire.ChangesActionType:
		list := f.svc.listTables
		switch a.GetType() {
		case wire.ListNamespacesActionType:
			list = f.svc.listNamespaces
		case wire.DroppedActionType:
			list = f.svc.dropped
		case wire.ChangesActionType:
			list = f.svc.changes
		}
		body, err := list(stream.Context(), a.GetBody())
		if err != nil {
			return err
		}
		return stream.Send(&flight.Result{Body: body})
	}
	return f.FlightServer.DoAction(a, stream)
}

// ListActions lists the search, describe and list actions, then the Flight SQL
// server's.
func (f *flightServer) ListActions(e *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range []*flight.ActionType{
		{Type: wire.SearchActionType, Description: searchActionDescription},
		{Type: wire.DescribeActionType, Description: describeActionDescription},
		{Type: wire.ListTablesActionType, Description: listTablesActionDescription},
		{Type: wire.ListNamespacesActionType, Description: listNamespacesActionDescription},
		{Type: wire.DroppedActionType, Description: droppedActionDescription},
		{Type: wire.ChangesActionType, Description: changesActionDescription},
		{Type: wire.CredentialsActionType, Description: credentialsActionDescription},
	} {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return f.FlightServer.ListActions(e, stream)
}

// parseSearch decodes and compiles a search body. Any failure is
// INVALID_ARGUMENT.
func parseSearch(body []byte) (table, column *like.Pattern, err error) {
	if len(body) > wire.MaxSearchBody {
		return nil, nil, status.Errorf(codes.InvalidArgument, "search: body is %d bytes, at most %d", len(body), wire.MaxSearchBody)
	}
	var req wire.SearchRequest
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return nil, nil, status.Errorf(codes.InvalidArgument, "search: body is not a search request: %v", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, nil, status.Error(codes.InvalidArgument, "search: body has data after the request")
		}
	}
	compileOpt := func(p, what string) (*like.Pattern, error) {
		if p == "" {
			return nil, nil
		}
		return compile(&p, what)
	}
	if table, err = compileOpt(req.TablePattern, "search: table_pattern"); err != nil {
		return nil, nil, err
	}
	if column, err = compileOpt(req.ColumnPattern, "search: column_pattern"); err != nil {
		return nil, nil, err
	}
	return table, column, nil
}

// search answers a search action for the tenant in ctx, handing send each
// Result body in order.
func (s *Service) search(ctx context.Context, body []byte, send func([]byte) error) error {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return err
	}
	tableP, columnP, err := parseSearch(body)
	if err != nil {
		return err
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil || ts.n == 0 {
		return err
	}
	// Each distinct schema is decoded and walked once per request.
	columns := map[int32]matchedColumns{}
	matches, sent := 0, 0
	for _, r := range ts.selectTables(ts.nsSpan, tableP, nil) {
		for i := r.lo; i < r.hi; i++ {
			if err := ctx.Err(); err != nil {
				return status.FromContextError(err).Err()
			}
			m := wire.SearchMatch{Namespace: ts.cols.Namespace.Value(i), Table: ts.cols.Name.Value(i),
				TableType: ts.cols.TableType.Value(i), Columns: []wire.SearchColumn{}}
			if columnP != nil {
				if ts.cols.SchemaRef.IsNull(i) {
					continue
				}
				ref := ts.cols.SchemaRef.Value(i)
				found, ok := columns[ref]
				if !ok {
					if found, err = matchColumns(ctx, ts.cols.Schemas.Value(int(ref)), columnP); err != nil {
						if ctx.Err() != nil {
							return status.FromContextError(ctx.Err()).Err()
						}
						s.opts.Log.ErrorContext(ctx, "search: stored schema does not decode", slog.String("error", err.Error()))
						return status.Error(codes.Internal, "search: a stored schema is unreadable")
					}
					columns[ref] = found
				}
				if len(found.cols) == 0 {
					continue
				}
				m.Columns, m.ColumnsTruncated = found.cols, found.truncated
			}
			if matches == wire.MaxSearchMatches {
				b, _ := json.Marshal(wire.SearchTruncated{Truncated: true, Limit: wire.MaxSearchMatches})
				return send(b)
			}
			b, err := json.Marshal(m)
			if err != nil {
				return status.Errorf(codes.Internal, "search: encode match: %v", err)
			}
			if sent+len(b) > wire.MaxSearchBytes {
				b, _ := json.Marshal(wire.SearchTruncated{Truncated: true, Limit: matches})
				return send(b)
			}
			if err := send(b); err != nil {
				return err
			}
			matches++
			sent += len(b)
		}
	}
	return nil
}

// matchedColumns are the columns of one schema a column pattern matched,
// cut at maxColumnBytes of JSON (truncated).
type matchedColumns struct {
	cols      []wire.SearchColumn
	truncated bool
}

// maxColumnBytes is what a match's columns may take as JSON: wire.MaxMatchBytes
// less room for its names (three names of catalog.MaxNameBytes, each
// escaped at most six bytes to one) and keys.
const maxColumnBytes = wire.MaxMatchBytes - 3*6*catalog.MaxNameBytes - 256

// matchColumns decodes a schema IPC message and returns the columns p
// matches by name or dotted path, depth first in schema order, until their
// JSON would pass maxColumnBytes. It stops with ctx's error when ctx ends,
// checked at every field.
func matchColumns(ctx context.Context, ipc []byte, p *like.Pattern) (matchedColumns, error) {
	sc, err := catalog.DecodeSchema(ipc)
	if err != nil {
		return matchedColumns{}, err
	}
	var (
		out  matchedColumns
		size int
	)
	var walk func(prefix string, fs []arrow.Field) error
	walk = func(prefix string, fs []arrow.Field) error {
		for _, f := range fs {
			if err := ctx.Err(); err != nil {
				return err
			}
			path := f.Name
			if prefix != "" {
				path = prefix + "." + f.Name
			}
			if p.Match(f.Name) || p.Match(path) {
				c := wire.SearchColumn{Path: path, Type: arrowtype.String(f.Type), Nullable: f.Nullable}
				b, err := json.Marshal(c)
				if err != nil {
					return err
				}
				if size+len(b)+1 > maxColumnBytes {
					out.truncated = true
					return errColumnsFull
				}
				size += len(b) + 1
				out.cols = append(out.cols, c)
			}
			if err := walk(path, children(f.Type)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("", sc.Fields()); err != nil && !errors.Is(err, errColumnsFull) {
		return matchedColumns{}, err
	}
	return out, nil
}

// errColumnsFull stops a walk whose matched columns reached maxColumnBytes.
var errColumnsFull = errors.New("search: columns full")

// children are a type's child fields: a struct's, union's or list's
// fields, a map's key and value, a dictionary's or extension's underlying
// type's; none for other types.
func children(t arrow.DataType) []arrow.Field {
	switch t := t.(type) {
	case *arrow.MapType:
		return []arrow.Field{t.KeyField(), t.ItemField()}
	case *arrow.DictionaryType:
		return children(t.ValueType)
	case arrow.ExtensionType:
		return children(t.StorageType())
	case arrow.NestedType:
		return t.Fields()
	}
	return nil
}
