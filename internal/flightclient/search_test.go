package flightclient

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/wire"
)

// searchServer answers the search action with fixed Result bodies, or an
// error, and records the request.
type searchServer struct {
	flight.BaseFlightServer
	results [][]byte
	err     error
	got     chan *flight.Action
	auth    chan []string
}

func (s *searchServer) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	s.got <- a
	s.auth <- md.Get("authorization")
	for _, r := range s.results {
		if err := stream.Send(&flight.Result{Body: r}); err != nil {
			return err
		}
	}
	return s.err
}

func TestSearch(t *testing.T) {
	match := func(table string, paths ...string) wire.SearchMatch {
		m := wire.SearchMatch{Namespace: "sales", Table: table, TableType: "TABLE", Columns: []wire.SearchColumn{}}
		for _, p := range paths {
			m.Columns = append(m.Columns, wire.SearchColumn{Path: p, Type: "int64", Nullable: true})
		}
		return m
	}
	body := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name          string
		results       [][]byte
		err           error
		want          []wire.SearchMatch
		wantTruncated bool
		wantCode      codes.Code
	}{
		{name: "none", want: []wire.SearchMatch{}},
		{name: "matches", results: [][]byte{body(match("a", "x.id")), body(match("b"))},
			want: []wire.SearchMatch{match("a", "x.id"), match("b")}},
		{name: "truncated", results: [][]byte{body(match("a")), body(wire.SearchTruncated{Truncated: true, Limit: 1})},
			want: []wire.SearchMatch{match("a")}, wantTruncated: true},
		{name: "error", err: status.Error(codes.InvalidArgument, "search: table_pattern: bad"), wantCode: codes.InvalidArgument},
		{name: "not JSON", results: [][]byte{[]byte("nope")}, wantCode: codes.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := startActionServer(t, tt.results, tt.err)

			res, err := c.Search(context.Background(), `order\_items`, "%id")
			if tt.wantCode != codes.OK {
				if err == nil || status.Code(err) != tt.wantCode {
					t.Fatalf("got %v, want code %v", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := <-srv.got
			var req wire.SearchRequest
			if err := json.Unmarshal(a.Body, &req); err != nil || a.Type != wire.SearchActionType ||
				req != (wire.SearchRequest{TablePattern: `order\_items`, ColumnPattern: "%id"}) {
				t.Fatalf("got action %q %s (%v), want %q with both patterns", a.Type, a.Body, err, wire.SearchActionType)
			}
			if got := <-srv.auth; !slices.Equal(got, []string{"Bearer tok"}) {
				t.Fatalf("got authorization %q, want the bearer token", got)
			}
			if res.Truncated != tt.wantTruncated {
				t.Errorf("got truncated %v, want %v", res.Truncated, tt.wantTruncated)
			}
			if !slices.EqualFunc(res.Matches, tt.want, func(a, b wire.SearchMatch) bool {
				return a.Namespace == b.Namespace && a.Table == b.Table && a.TableType == b.TableType && slices.Equal(a.Columns, b.Columns)
			}) {
				t.Errorf("got %+v, want %+v", res.Matches, tt.want)
			}
		})
	}
}

// startActionServer serves a searchServer answering every action with
// results then err, and returns it with a client dialled with token "tok".
func startActionServer(t *testing.T, results [][]byte, err error) (*searchServer, *Client) {
	t.Helper()
	srv := &searchServer{results: results, err: err, got: make(chan *flight.Action, 1), auth: make(chan []string, 1)}
	g := grpc.NewServer()
	flight.RegisterFlightServiceServer(g, srv)
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	c, derr := Dial(ln.Addr().String(), "tok")
	if derr != nil {
		t.Fatal(derr)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}
