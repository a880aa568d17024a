package discovery_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	_ "github.com/apache/arrow-go/v18/arrow/flight/flightsql/driver" // registers "flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/discovery"
)

// arrow-go's database/sql driver (arrow/flight/flightsql/driver, v18.9.0)
// takes a DSN "flightsql://user:password@host:port" or
// "flightsql://host:port?token=…" (config.go, NewDriverConfigFromDSN) and
// puts the credentials on every call through grpc.WithPerRPCCredentials
// (utils.go, grpcCredentials.GetRequestMetadata): "authorization: Bearer
// <token>" for token=, else "authorization: Basic base64(user:password)".
// It never runs a Handshake, so lake must take Basic on any call.

// sqlTables runs a query through db and returns its rows as
// "catalog/schema/table", one per row, in order.
func sqlTables(ctx context.Context, db *sql.DB, query string) ([]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var c, s, n string
		if err := rows.Scan(&c, &s, &n); err != nil {
			return nil, err
		}
		got = append(got, c+"/"+s+"/"+n)
	}
	return got, rows.Err()
}

// openDSN opens a database/sql handle on dsn through arrow-go's driver.
func openDSN(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("flightsql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestDatabaseSQLDriver: arrow-go's database/sql driver connects with
// either of its DSN forms, user:password (Basic on every call) and token=
// (Bearer on every call); each sees its own tenant's tables alone, through
// a direct query (GetFlightInfo + DoGet) and a prepared statement
// (DoAction too), and a wrong password or token is refused.
func TestDatabaseSQLDriver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.register("acme", "sales", "refunds", wide(2))
	e.register("globex", "hr", "salaries", wide(3))
	e.publish()
	acme, globex := token(t, "acme"), token(t, "globex")

	basicDSN := func(user, password string) string {
		return (&url.URL{Scheme: "flightsql", Host: e.addr, User: url.UserPassword(user, password)}).String()
	}
	tokenDSN := func(tok string) string {
		return (&url.URL{Scheme: "flightsql", Host: e.addr, RawQuery: url.Values{"token": {tok}}.Encode()}).String()
	}
	const query = "SELECT table_catalog, table_schema, table_name FROM information_schema.tables ORDER BY 1, 2, 3"

	ok := []struct {
		name string
		dsn  string
		want string
	}{
		{"acme user:password", basicDSN("acme", acme), "acme/sales/orders acme/sales/refunds"},
		{"globex user:password", basicDSN("globex", globex), "globex/hr/salaries"},
		{"acme token", tokenDSN(acme), "acme/sales/orders acme/sales/refunds"},
		{"globex token", tokenDSN(globex), "globex/hr/salaries"},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := openDSN(t, tt.dsn)
			got, err := sqlTables(ctx, db, query)
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("tables = %q, want %q", g, tt.want)
			}

			stmt, err := db.PrepareContext(ctx, query)
			if err != nil {
				t.Fatalf("prepare: %v", err)
			}
			defer stmt.Close()
			rows, err := stmt.QueryContext(ctx)
			if err != nil {
				t.Fatalf("prepared query: %v", err)
			}
			var n int
			for rows.Next() {
				var c, s, name string
				if err := rows.Scan(&c, &s, &name); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(tt.want, c+"/") {
					t.Errorf("prepared statement row of catalog %q, want only %q", c, strings.Split(tt.want, "/")[0])
				}
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("prepared rows: %v", err)
			}
			if want := len(strings.Fields(tt.want)); n != want {
				t.Errorf("prepared statement rows = %d, want %d", n, want)
			}

			// Another tenant's tables, asked for by name, are not there.
			other := "globex"
			if strings.HasPrefix(tt.want, "globex/") {
				other = "acme"
			}
			got, err = sqlTables(ctx, db, "SELECT table_catalog, table_schema, table_name FROM information_schema.tables WHERE table_catalog = '"+other+"'")
			if err != nil {
				t.Fatalf("query for %s: %v", other, err)
			}
			if len(got) != 0 {
				t.Errorf("query for %s's tables = %q, want none", other, got)
			}
		})
	}

	refused := []struct {
		name    string
		dsn     string
		wantMsg string
	}{
		{"password not a token", basicDSN("acme", "hunter2"), "the password must be a valid lake token"},
		{"password another tenant's token", basicDSN("acme", globex), `this token is for "globex", not "acme"`},
		{"token signed with another key", basicDSN("acme", acme[:len(acme)-4]+"AAAA"), "the password must be a valid lake token"},
		{"username alone", (&url.URL{Scheme: "flightsql", Host: e.addr, User: url.User("acme")}).String(), "unauthenticated"},
		{"bad token", tokenDSN("not-a-token"), "unauthenticated"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := sqlTables(context.Background(), openDSN(t, tt.dsn), query)
			if status.Code(err) != codes.Unauthenticated {
				t.Fatalf("query = %q, %v; want UNAUTHENTICATED", got, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q, want it to say %q", err, tt.wantMsg)
			}
		})
	}
}

// TestBasicOnEveryCall: "authorization: Basic base64(tenant:token)" on a
// call that is not a Handshake — unary (GetFlightInfo) and streaming
// (DoGet) — is taken as the Handshake takes it, and answered with the
// bearer token in the response header, as the Handshake answers.
func TestBasicOnEveryCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.register("globex", "hr", "secret", wide(2))
	e.publish()
	tok := token(t, "acme")
	basic := func(enc *base64.Encoding, user, password string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "authorization",
			"Basic "+enc.EncodeToString([]byte(user+":"+password)))
	}

	for _, enc := range []struct {
		name string
		enc  *base64.Encoding
	}{{"padded", base64.StdEncoding}, {"unpadded", base64.RawStdEncoding}} {
		t.Run(enc.name, func(t *testing.T) {
			t.Parallel()
			ctx := basic(enc.enc, "acme", tok)
			var header metadata.MD
			info, err := e.client.GetCatalogs(ctx, grpc.Header(&header))
			if err != nil {
				t.Fatalf("GetCatalogs with Basic: %v", err)
			}
			if got, want := strings.Join(header.Get("authorization"), ","), "Bearer "+tok; got != want {
				t.Errorf("GetFlightInfo response authorization = %q, want %q", got, want)
			}
			var recs []string
			for _, ep := range info.Endpoint {
				var header metadata.MD
				rdr, err := e.client.DoGet(ctx, ep.Ticket, grpc.Header(&header))
				if err != nil {
					t.Fatalf("DoGet with Basic: %v", err)
				}
				for rdr.Next() {
					recs = append(recs, columnValues([]arrow.RecordBatch{rdr.RecordBatch()}, 0))
				}
				if err := rdr.Err(); err != nil {
					t.Fatal(err)
				}
				rdr.Release()
				if got, want := strings.Join(header.Get("authorization"), ","), "Bearer "+tok; got != want {
					t.Errorf("DoGet response authorization = %q, want %q", got, want)
				}
			}
			if got := strings.Join(recs, " "); got != "acme" {
				t.Errorf("catalogs = %q, want %q", got, "acme")
			}
		})
	}

	t.Run("username not the tenant", func(t *testing.T) {
		_, err := e.client.GetCatalogs(basic(base64.StdEncoding, "globex", tok))
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), `this token is for "acme", not "globex"`) {
			t.Errorf("GetCatalogs as globex with acme's token: %v, want UNAUTHENTICATED naming both", err)
		}
	})
	t.Run("bad password", func(t *testing.T) {
		_, err := e.client.GetCatalogs(basic(base64.StdEncoding, "acme", "nope"))
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "the password must be a valid lake token") {
			t.Errorf("GetCatalogs with a bad password: %v, want UNAUTHENTICATED", err)
		}
	})
	t.Run("bearer answers no header", func(t *testing.T) {
		var header metadata.MD
		if _, err := e.client.GetCatalogs(as(t, "acme"), grpc.Header(&header)); err != nil {
			t.Fatal(err)
		}
		if got := header.Get("authorization"); len(got) != 0 {
			t.Errorf("response authorization to a bearer call = %q, want none", got)
		}
	})
}
