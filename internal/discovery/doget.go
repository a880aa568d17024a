package discovery

import (
	"bytes"
	"context"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
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

// flightServer is the Flight service: arrow-go's Flight SQL server with
// DoGet taken over for lake's own tickets, the catalog commands, whose
// whole-tenant answers of a prepared tenant go out as the messages encoded
// when it was prepared, and DoAction intercepted for lake's actions
// (search.go). Every other ticket is arrow-go's to dispatch.
type flightServer struct {
	flight.FlightServer
	svc *Service
}

// newFlightServer wraps the Flight SQL server of svc.
func newFlightServer(svc *Service, inner flight.FlightServer) *flightServer {
	return &flightServer{FlightServer: inner, svc: svc}
}

// answer is what a DoGet sends: the result schema, then either messages
// encoded in advance (msgs, sent as they are; prepared when they were
// encoded as the tenant was prepared, not for this request or its like)
// or record batches (recs, written and released). Neither means an empty
// result.
type answer struct {
	schema   *arrow.Schema
	msgs     [][]byte
	prepared bool
	recs     []arrow.RecordBatch
}

// DoGet answers lake's own tickets, the catalog commands (GetCatalogs,
// GetDbSchemas, GetTables), from their answer functions, and hands every
// other ticket to arrow-go's Flight SQL dispatcher, which calls the
// Service's DoGet method for its command (statements, prepared statements,
// GetTableTypes, GetSqlInfo, GetXdbcTypeInfo, the key commands) or answers
// INVALID_ARGUMENT for a ticket that is none of them.
func (f *flightServer) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	ctx := stream.Context()
	cmd, err := parseTicket(t.GetTicket())
	if err != nil {
		return err
	}
	var a answer
	switch c := cmd.(type) {
	case *pb.CommandGetCatalogs:
		a, err = f.svc.catalogsAnswer(ctx)
	case *pb.CommandGetDbSchemas:
		a, err = f.svc.dbSchemasAnswer(ctx, c, t.GetTicket())
	case *pb.CommandGetTables:
		a, err = f.svc.tablesAnswer(ctx, c, t.GetTicket())
	default:
		// arrow-go returns its stream's context error as it is: give it
		// its gRPC code here, as gRPC would, so the request metrics count
		// it as DEADLINE_EXCEEDED or CANCELED.
		err := f.FlightServer.DoGet(t, stream)
		if _, ok := status.FromError(err); !ok {
			err = status.FromContextError(err).Err()
		}
		return err
	}
	if err != nil {
		return err
	}
	if a.msgs != nil {
		if m := f.svc.opts.Metrics; m != nil && a.prepared {
			m.preEncoded.WithLabelValues(commandLabel(string(cmd.ProtoReflect().Descriptor().FullName()))).Inc()
		}
		return sendEncoded(stream, a.msgs)
	}
	return f.svc.sendRecords(stream, a.schema, a.recs)
}

// sendEncoded sends messages marshaled in advance, as they are.
func sendEncoded(stream flight.FlightService_DoGetServer, msgs [][]byte) error {
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

// sendRecords writes recs (releasing every one, sent or not) after the
// schema message; with no batch it sends the schema alone (encodeAnswer).
func (s *Service) sendRecords(stream flight.FlightService_DoGetServer, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	msgs, err := s.encodeAnswer(stream.Context(), schema, recs)
	if err != nil {
		return err
	}
	return sendEncoded(stream, msgs)
}

// encodeAnswer encodes an answer's messages, releasing every one of recs:
// the schema message (one of the catalog commands' result schemas, whose
// message was encoded when the Service was made: schemaMessages), then
// each batch as one FlightData, as arrow-go's flight.Writer would encode
// it. Every message is encoded before the first goes out, so the answer is
// handed to the transport back to back, as a pre-encoded answer is, and
// can be kept (the cache's answer kind).
func (s *Service) encodeAnswer(ctx context.Context, schema *arrow.Schema, recs []arrow.RecordBatch) ([][]byte, error) {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	msg, ok := s.schemaMessages[schema]
	if !ok {
		// Only the catalog commands' result schemas come here.
		return nil, status.Errorf(codes.Internal, "no schema message for %v", schema)
	}
	msgs := make([][]byte, 0, 1+len(recs))
	msgs = append(msgs, msg)
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}
		b, err := encodeBatch(r, s.mem)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, b)
	}
	return msgs, nil
}

// encodeBatch encodes one record batch (of a schema without dictionaries)
// as one marshaled FlightData message.
func encodeBatch(r arrow.RecordBatch, mem memory.Allocator) ([]byte, error) {
	p, err := ipc.GetRecordBatchPayload(r, ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer p.Release()
	meta := p.Meta()
	defer meta.Release()
	var body bytes.Buffer
	if err := p.SerializeBody(&body); err != nil {
		return nil, err
	}
	return proto.Marshal(&flight.FlightData{DataHeader: meta.Bytes(), DataBody: body.Bytes()})
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
// command (a protobuf Any), from a fixed set: "invalid" when b is no
// well-formed protobuf message. It reads the Any's type URL in place,
// without decoding the command.
func commandName(b []byte) string {
	var typeURL []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return "invalid"
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !utf8.Valid(v) {
				return "invalid" // as proto.Unmarshal finds it: a string field, each time
			}
			typeURL, b = v, b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return "invalid"
		}
		b = b[n:]
	}
	// The message name is what follows the type URL's last '/'.
	if i := bytes.LastIndexByte(typeURL, '/'); i >= 0 {
		typeURL = typeURL[i+1:]
	}
	return commandLabel(string(typeURL))
}

// commandLabel is the metric label of a Flight SQL command's full message
// name: its name in commandNames, else "unknown".
func commandLabel(messageName string) string {
	if name, ok := commandNames[messageName]; ok {
		return name
	}
	return "unknown"
}

// rpcName is the last element of a gRPC method name ("DoGet").
func rpcName(fullMethod string) string {
	return fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
}
