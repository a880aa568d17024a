// Package flightclient holds the Flight SQL client calls lake's CLI, tests and
// benchmark driver share.
package flightclient

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// TableRow is one GetTables row; Schema holds the table_schema bytes when
// the request included schemas.
type TableRow struct {
	Catalog, Namespace, Name, Type string
	Schema                         []byte
}

// GetTables runs GetTables and DoGet on every endpoint with c, and returns
// the rows.
func GetTables(ctx context.Context, c *flightsql.Client, opts *flightsql.GetTablesOpts) ([]TableRow, error) {
	info, err := c.GetTables(ctx, opts)
	if err != nil {
		return nil, err
	}
	var rows []TableRow
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				r := TableRow{
					Catalog:   rec.Column(0).(*array.String).Value(i),
					Namespace: rec.Column(1).(*array.String).Value(i),
					Name:      rec.Column(2).(*array.String).Value(i),
					Type:      rec.Column(3).(*array.String).Value(i),
				}
				if opts.IncludeSchema {
					r.Schema = append([]byte(nil), rec.Column(4).(*array.Binary).Value(i)...)
				}
				rows = append(rows, r)
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// Client is a Flight SQL client of lake's discovery service that sends a
// bearer token with every call. It is safe for concurrent use.
type Client struct {
	c     *flightsql.Client
	token string
}

// Endpoint is a discovery address resolved to a gRPC target and a
// transport.
type Endpoint struct {
	// Target is host:port, as gRPC dials it.
	Target string
	// TLS is whether the connection is made over TLS.
	TLS bool
}

// ParseEndpoint resolves a discovery address. grpc+tls://host:port is TLS
// and grpc://host:port plaintext, each as written; a bare host:port is TLS
// unless its host is loopback (localhost, 127.0.0.0/8, ::1, or empty),
// so a bearer token crosses a network in cleartext only when grpc:// asks
// for it. Any other scheme is an error.
func ParseEndpoint(addr string) (Endpoint, error) {
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		switch strings.ToLower(scheme) {
		case "grpc+tls":
			return Endpoint{Target: rest, TLS: true}, checkTarget(addr, rest)
		case "grpc":
			return Endpoint{Target: rest}, checkTarget(addr, rest)
		default:
			return Endpoint{}, fmt.Errorf("flightclient: discovery address %q: scheme %q is not grpc:// (plaintext) or grpc+tls:// (TLS)", addr, scheme)
		}
	}
	if err := checkTarget(addr, addr); err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Target: addr, TLS: !isLoopback(host(addr))}, nil
}

// checkTarget refuses an address with no host:port after its scheme, or
// one with a path.
func checkTarget(addr, target string) error {
	if target == "" || strings.ContainsAny(target, "/?#") {
		return fmt.Errorf("flightclient: discovery address %q: want host:port, grpc://host:port or grpc+tls://host:port", addr)
	}
	return nil
}

// host is target's host: target itself when it has no port.
func host(target string) string {
	if h, _, err := net.SplitHostPort(target); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(target, "["), "]")
}

// isLoopback reports whether h names this machine only.
func isLoopback(h string) bool {
	if h == "" || strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// Dial connects to addr (see ParseEndpoint: host:port is TLS unless the
// host is loopback, grpc://host:port plaintext, grpc+tls://host:port TLS)
// with token as the bearer credential. The connection is made lazily: an
// unreachable address fails on the first call. opts are added to the
// gRPC dial options (interceptors, for instance).
func Dial(addr, token string, opts ...grpc.DialOption) (*Client, error) {
	ep, err := ParseEndpoint(addr)
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if ep.TLS {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	c, err := flightsql.NewClient(ep.Target, nil, nil, append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("flightclient: discovery %s: %w", ep.Target, err)
	}
	return &Client{c: c, token: token}, nil
}

// Close closes the connection.
func (d *Client) Close() error { return d.c.Close() }

func (d *Client) ctx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+d.token)
}

// Table is one GetTables row with its schema decoded (nil when the request
// did not include schemas or the table has none).
type Table struct {
	Catalog   string        `json:"tenant"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Type      string        `json:"table_type"`
	Schema    *arrow.Schema `json:"-"`
}

// EscapeLike makes s a LIKE pattern that matches only s.
func EscapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Tables runs GetTables and decodes the schemas when opts asks for them.
// When a table without a stored schema matches and opts includes schemas,
// discovery answers codes.FailedPrecondition (see TablesWherePossible).
func (d *Client) Tables(ctx context.Context, opts *flightsql.GetTablesOpts) ([]Table, error) {
	got, err := GetTables(d.ctx(ctx), d.c, opts)
	if err != nil {
		return nil, err
	}
	rows := make([]Table, len(got))
	for i, g := range got {
		rows[i] = Table{Catalog: g.Catalog, Namespace: g.Namespace, Name: g.Name, Type: g.Type}
		if opts.IncludeSchema {
			if rows[i].Schema, err = catalog.DecodeSchema(g.Schema); err != nil {
				return nil, fmt.Errorf("flightclient: schema of %s.%s: %w", g.Namespace, g.Name, err)
			}
		}
	}
	return rows, nil
}

// TablesWherePossible lists the tables opts matches, then fills in the
// schema of every table that has one: one request per namespace, and one
// per table in a namespace that holds a table without a schema. Tables
// without a schema keep a nil Schema.
func (d *Client) TablesWherePossible(ctx context.Context, opts *flightsql.GetTablesOpts) ([]Table, error) {
	names := &flightsql.GetTablesOpts{Catalog: opts.Catalog, DbSchemaFilterPattern: opts.DbSchemaFilterPattern,
		TableNameFilterPattern: opts.TableNameFilterPattern, TableTypes: opts.TableTypes}
	rows, err := d.Tables(ctx, names)
	if err != nil {
		return nil, err
	}
	schemas := map[[2]string]*arrow.Schema{}
	done := map[string]bool{}
	for _, r := range rows {
		if done[r.Namespace] {
			continue
		}
		done[r.Namespace] = true
		ns := EscapeLike(r.Namespace)
		got, err := d.Tables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &ns, IncludeSchema: true})
		if status.Code(err) == codes.FailedPrecondition {
			for _, t := range rows {
				if t.Namespace != r.Namespace {
					continue
				}
				name := EscapeLike(t.Name)
				one, err := d.Tables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &ns, TableNameFilterPattern: &name, IncludeSchema: true})
				if err == nil && len(one) == 1 {
					schemas[[2]string{t.Namespace, t.Name}] = one[0].Schema
				} else if err != nil && status.Code(err) != codes.FailedPrecondition {
					return nil, err
				}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, t := range got {
			schemas[[2]string{t.Namespace, t.Name}] = t.Schema
		}
	}
	for i := range rows {
		rows[i].Schema = schemas[[2]string{rows[i].Namespace, rows[i].Name}]
	}
	return rows, nil
}

// SearchResult is a search's answer.
type SearchResult struct {
	// Matches are the tables found, in (namespace, table) order.
	Matches []wire.SearchMatch
	// Truncated is set when more tables matched than discovery returns
	// (wire.MaxSearchMatches); Matches holds the first ones.
	Truncated bool
}

// Search runs discovery's search action (wire.SearchActionType) over
// the token's tenant: tables whose name matches tablePattern and, when
// columnPattern is not empty, that have a column matching it, with those
// columns. Both are LIKE patterns; empty filters nothing. An invalid
// pattern is codes.InvalidArgument.
func (d *Client) Search(ctx context.Context, tablePattern, columnPattern string) (*SearchResult, error) {
	body, err := json.Marshal(wire.SearchRequest{TablePattern: tablePattern, ColumnPattern: columnPattern})
	if err != nil {
		return nil, fmt.Errorf("flightclient: search: %w", err)
	}
	stream, err := d.c.Client.DoAction(d.ctx(ctx), &flight.Action{Type: wire.SearchActionType, Body: body})
	if err != nil {
		return nil, err
	}
	res := &SearchResult{Matches: []wire.SearchMatch{}}
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		var one struct {
			wire.SearchMatch
			wire.SearchTruncated
		}
		if err := json.Unmarshal(r.Body, &one); err != nil {
			return nil, fmt.Errorf("flightclient: search: result %d: %w", len(res.Matches), err)
		}
		if one.Truncated {
			res.Truncated = true
			continue
		}
		res.Matches = append(res.Matches, one.SearchMatch)
	}
}

// Describe runs discovery's describe action (wire.DescribeActionType)
// for one table of the token's tenant. A table the tenant does not have is
// codes.NotFound; invalid names are codes.InvalidArgument.
func (d *Client) Describe(ctx context.Context, namespace, table string) (*wire.TableDescription, error) {
	body, err := json.Marshal(wire.DescribeRequest{Namespace: namespace, Table: table})
	if err != nil {
		return nil, fmt.Errorf("flightclient: describe: %w", err)
	}
	stream, err := d.c.Client.DoAction(d.ctx(ctx), &flight.Action{Type: wire.DescribeActionType, Body: body})
	if err != nil {
		return nil, err
	}
	r, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("flightclient: describe: no result")
	}
	if err != nil {
		return nil, err
	}
	var out wire.TableDescription
	if err := json.Unmarshal(r.Body, &out); err != nil {
		return nil, fmt.Errorf("flightclient: describe: %w", err)
	}
	// Drain the stream so the server's status is seen.
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return &out, nil
		} else if err != nil {
			return nil, err
		}
	}
}

// ListTables runs discovery's list-tables action
// (wire.ListTablesActionType): the page of the token's tenant's
// tables from offset, at most limit (1 to wire.MaxListLimit), of
// namespace alone when it is not empty, with the number of tables matched.
func (d *Client) ListTables(ctx context.Context, namespace string, offset, limit int) (*wire.TablePage, error) {
	var out wire.TablePage
	req := wire.ListRequest{Namespace: namespace, Offset: offset, Limit: limit}
	if err := d.oneResult(ctx, wire.ListTablesActionType, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListNamespaces runs discovery's list-namespaces action
// (wire.ListNamespacesActionType): the page of the token's tenant's
// namespaces from offset, at most limit, each with its number of tables.
func (d *Client) ListNamespaces(ctx context.Context, offset, limit int) (*wire.NamespacePage, error) {
	var out wire.NamespacePage
	if err := d.oneResult(ctx, wire.ListNamespacesActionType, wire.ListRequest{Offset: offset, Limit: limit}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Changes runs discovery's changes action (wire.ChangesActionType): at
// most limit changes of the token's tenant after the cursor since (empty:
// from the first), in order, and the cursor to ask from next.
func (d *Client) Changes(ctx context.Context, since string, limit int) (*wire.ChangePage, error) {
	var out wire.ChangePage
	if err := d.oneResult(ctx, wire.ChangesActionType, wire.ChangesRequest{Since: since, Limit: limit}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// oneResult runs the action typ with req as its JSON body and decodes its
// one Result into out.
func (d *Client) oneResult(ctx context.Context, typ string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("flightclient: %s: %w", typ, err)
	}
	stream, err := d.c.Client.DoAction(d.ctx(ctx), &flight.Action{Type: typ, Body: body})
	if err != nil {
		return err
	}
	r, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("flightclient: %s: no result", typ)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		return fmt.Errorf("flightclient: %s: %w", typ, err)
	}
	// Drain the stream so the server's status is seen.
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// WithToken returns a client that shares d's connection and sends token as
// the bearer credential. Closing either closes the shared connection.
func (d *Client) WithToken(token string) *Client { return &Client{c: d.c, token: token} }

// SnapshotInfo is what discovery says of the token's tenant's snapshot.
type SnapshotInfo struct {
	// Generation is the snapshot generation in which the tenant's tables
	// last changed (0 when it has none).
	Generation int64
	// CreatedAt is when that generation was built; zero when the tenant has
	// no tables.
	CreatedAt time.Time
	// Tables is how many tables the tenant has.
	Tables int64
}

// SnapshotInfo asks discovery's GetSqlInfo for the token's tenant's
// snapshot generation, creation time and table count (the custom ids
// wire.SqlInfoSnapshotGeneration, SqlInfoSnapshotCreatedAt and
// SqlInfoTenantTables).
func (d *Client) SnapshotInfo(ctx context.Context) (SnapshotInfo, error) {
	ctx = d.ctx(ctx)
	info, err := d.c.GetSqlInfo(ctx, []flightsql.SqlInfo{wire.SqlInfoSnapshotGeneration, wire.SqlInfoSnapshotCreatedAt, wire.SqlInfoTenantTables})
	if err != nil {
		return SnapshotInfo{}, err
	}
	var out SnapshotInfo
	for _, ep := range info.Endpoint {
		rdr, err := d.c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return SnapshotInfo{}, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			ids, ok := rec.Column(0).(*array.Uint32)
			vals, ok2 := rec.Column(1).(*array.DenseUnion)
			if !ok || !ok2 {
				rdr.Release()
				return SnapshotInfo{}, errors.New("flightclient: sql info: unexpected result schema")
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				child, off := vals.Field(vals.ChildID(i)), int(vals.ValueOffset(i))
				switch c := child.(type) {
				case *array.Int64:
					switch ids.Value(i) {
					case wire.SqlInfoSnapshotGeneration:
						out.Generation = c.Value(off)
					case wire.SqlInfoTenantTables:
						out.Tables = c.Value(off)
					}
				case *array.String:
					if ids.Value(i) == wire.SqlInfoSnapshotCreatedAt {
						if out.CreatedAt, err = time.Parse(time.RFC3339Nano, c.Value(off)); err != nil {
							rdr.Release()
							return SnapshotInfo{}, fmt.Errorf("flightclient: sql info: snapshot time: %w", err)
						}
					}
				}
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return SnapshotInfo{}, err
		}
	}
	return out, nil
}
