package discovery

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// encodedMessage is a FlightData message already marshaled. The server's
// codec (wireCodec) sends its bytes as they are.
type encodedMessage []byte

// wireCodec is gRPC's proto codec, except that an encodedMessage is sent
// without marshaling. Install it with grpc.ForceServerCodecV2.
type wireCodec struct{ proto encoding.CodecV2 }

func newWireCodec() wireCodec { return wireCodec{proto: encoding.GetCodecV2("proto")} }

func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(encodedMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(m)}, nil
	}
	return c.proto.Marshal(v)
}

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func (wireCodec) Name() string { return "proto" }

// flightServer is the Flight service: arrow-go's Flight SQL server (which
// re-encodes every batch it streams) with DoGet intercepted, so the
// whole-tenant answers of a prepared tenant go out as the messages encoded
// when it was prepared, and DoAction intercepted for the search action
// (search.go).
type flightServer struct {
	flight.FlightServer
	svc *Service
}

// newFlightServer wraps the Flight SQL server of svc.
func newFlightServer(svc *Service, inner flight.FlightServer) *flightServer {
	return &flightServer{FlightServer: inner, svc: svc}
}

// DoGet sends a pre-encoded answer when the ticket asks for one, else lets
// the Flight SQL layer answer.
func (f *flightServer) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	msgs, ok, err := f.svc.preEncoded(stream.Context(), t.GetTicket())
	if err != nil {
		return err
	}
	if !ok {
		return f.FlightServer.DoGet(t, stream)
	}
	if m := f.svc.opts.Metrics; m != nil {
		m.preEncoded.WithLabelValues(commandName(t.GetTicket())).Inc()
	}
	for _, m := range msgs {
		if err := stream.Context().Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		if err := stream.SendMsg(encodedMessage(m)); err != nil {
			return err
		}
	}
	return nil
}

// parseTicket decodes a DoGet ticket (or a descriptor's command): a
// protobuf Any holding a Flight SQL command. Any failure is
// INVALID_ARGUMENT.
func parseTicket(b []byte) (proto.Message, error) {
	var a anypb.Any
	if err := proto.Unmarshal(b, &a); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "unable to parse ticket: %v", err)
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "unable to unmarshal proto.Any: %v", err)
	}
	return m, nil
}

// preEncoded returns the pre-encoded messages answering ticket, when it is
// a whole-tenant GetTables, GetDbSchemas or GetCatalogs of a tenant with
// tables; ok is false for every other request. The tenant is the
// authenticated one in ctx, never one named by the ticket.
func (s *Service) preEncoded(ctx context.Context, ticket []byte) (msgs [][]byte, ok bool, err error) {
	cmd, err := parseTicket(ticket)
	if err != nil {
		return nil, false, err
	}
	switch cmd.(type) {
	case *pb.CommandGetTables, *pb.CommandGetDbSchemas, *pb.CommandGetCatalogs:
	default:
		return nil, false, nil
	}
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, false, err
	}
	wholeTenant := func(catalog *string, patterns ...*string) bool {
		if catalog != nil && *catalog != tenant {
			return false
		}
		for _, p := range patterns {
			if p == nil {
				continue
			}
			c, err := compile(p, "pattern")
			if err != nil || !c.All() {
				return false
			}
		}
		return true
	}
	switch c := cmd.(type) {
	case *pb.CommandGetCatalogs:
	case *pb.CommandGetDbSchemas:
		if !wholeTenant(c.Catalog, c.DbSchemaFilterPattern) {
			return nil, false, nil
		}
	case *pb.CommandGetTables:
		if !wholeTenant(c.Catalog, c.DbSchemaFilterPattern, c.TableNameFilterPattern) {
			return nil, false, nil
		}
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil || ts == nil {
		return nil, false, err
	}
	switch c := cmd.(type) {
	case *pb.CommandGetCatalogs:
		return ts.catalogs, true, nil
	case *pb.CommandGetDbSchemas:
		return ts.dbSchemas, true, nil
	case *pb.CommandGetTables:
		types, err := newTypeFilter(c.TableTypes)
		if err != nil {
			return nil, false, err
		}
		switch {
		case !ts.coversTypes(types):
			return nil, false, nil
		case !c.IncludeSchema:
			return ts.tables, true, nil
		case ts.tablesWithSchema == nil:
			return nil, false, errNoSchema
		default:
			return ts.tablesWithSchema, true, nil
		}
	}
	return nil, false, nil
}

// commandNames maps the Flight SQL commands to their metric labels.
// Anything else is "unknown", so clients cannot grow the label set.
var commandNames = map[string]string{
	"arrow.flight.protocol.sql.CommandGetCatalogs":             "GetCatalogs",
	"arrow.flight.protocol.sql.CommandGetDbSchemas":            "GetDbSchemas",
	"arrow.flight.protocol.sql.CommandGetTables":               "GetTables",
	"arrow.flight.protocol.sql.CommandGetTableTypes":           "GetTableTypes",
	"arrow.flight.protocol.sql.CommandGetSqlInfo":              "GetSqlInfo",
	"arrow.flight.protocol.sql.CommandGetXdbcTypeInfo":         "GetXdbcTypeInfo",
	"arrow.flight.protocol.sql.CommandGetPrimaryKeys":          "GetPrimaryKeys",
	"arrow.flight.protocol.sql.CommandGetExportedKeys":         "GetExportedKeys",
	"arrow.flight.protocol.sql.CommandGetImportedKeys":         "GetImportedKeys",
	"arrow.flight.protocol.sql.CommandGetCrossReference":       "GetCrossReference",
	"arrow.flight.protocol.sql.CommandStatementQuery":          "StatementQuery",
	"arrow.flight.protocol.sql.CommandStatementSubstraitPlan":  "StatementSubstraitPlan",
	"arrow.flight.protocol.sql.CommandPreparedStatementQuery":  "PreparedStatementQuery",
	"arrow.flight.protocol.sql.CommandStatementUpdate":         "StatementUpdate",
	"arrow.flight.protocol.sql.CommandPreparedStatementUpdate": "PreparedStatementUpdate",
	"arrow.flight.protocol.sql.CommandStatementIngest":         "StatementIngest",
	"arrow.flight.protocol.sql.TicketStatementQuery":           "StatementQuery",
}

// commandName names the Flight SQL command in a ticket or descriptor
// command, from a fixed set.
func commandName(b []byte) string {
	var a anypb.Any
	if err := proto.Unmarshal(b, &a); err != nil {
		return "invalid"
	}
	if name, ok := commandNames[string(a.MessageName())]; ok {
		return name
	}
	return "unknown"
}

// rpcName is the last element of a gRPC method name ("DoGet").
func rpcName(fullMethod string) string {
	return fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
}
