package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// ---- 5. the transport's ceiling ----

// The ceiling is a bare grpc-go Flight service that answers from memory
// with the messages lake sent for the same requests, already marshaled:
// no Flight SQL layer, no authentication, no interceptors, no Arrow. What
// any Flight server here can reach is what it reaches. It runs as a child
// process (this program, re-executed with ceilingEnv set), so it has a
// heap and a garbage collector of its own, as lake has.

// ceilingEnv, when set in the environment, makes this program the ceiling
// server: "<listen address> <recording file>".
const ceilingEnv = "LAKEBENCH_CEILING"

// recordedAnswer is one request as lake answered it: the descriptor's
// command as a Flight SQL client sends it, the FlightInfo lake returned and
// every FlightData message of the DoGet of its ticket, each marshaled; or,
// for an action (Action set), its body and every Result lake streamed.
type recordedAnswer struct {
	Cmd      []byte   `json:"cmd,omitempty"`
	Info     []byte   `json:"info,omitempty"`
	Action   string   `json:"action,omitempty"`
	Body     []byte   `json:"body,omitempty"`
	Messages [][]byte `json:"messages"`
}

// recordAction runs the action typ with body on c's server and keeps every
// Result it streamed.
func recordAction(ctx context.Context, c flight.FlightServiceClient, typ string, body []byte) (recordedAnswer, error) {
	stream, err := c.DoAction(ctx, &flight.Action{Type: typ, Body: body})
	if err != nil {
		return recordedAnswer{}, err
	}
	rec := recordedAnswer{Action: typ, Body: body}
	rec.Messages, err = recvAll(stream.Recv)
	return rec, err
}

// recvAll receives a stream's messages until its end, each marshaled.
func recvAll[M proto.Message](recv func() (M, error)) ([][]byte, error) {
	var out [][]byte
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

// sendAll sends msgs, each already marshaled, on stream.
func sendAll(stream grpc.ServerStream, msgs [][]byte) error {
	for _, m := range msgs {
		if err := stream.SendMsg(marshaled(m)); err != nil {
			return err
		}
	}
	return nil
}

// actionKey names a recorded action: its type and body.
func actionKey(typ string, body []byte) string { return typ + "\x00" + string(body) }

// descriptorFor is the descriptor a Flight SQL client sends for cmd: the
// command packed in a protobuf Any, as the CMD of a FlightDescriptor.
func descriptorFor(cmd proto.Message) (*flight.FlightDescriptor, error) {
	a, err := anypb.New(cmd)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(a)
	if err != nil {
		return nil, err
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}, nil
}

// record asks c's server for cmd with a raw Flight client (GetFlightInfo,
// then DoGet of its one ticket) and keeps every message it received.
func record(ctx context.Context, c flight.FlightServiceClient, cmd proto.Message) (recordedAnswer, error) {
	desc, err := descriptorFor(cmd)
	if err != nil {
		return recordedAnswer{}, err
	}
	info, err := c.GetFlightInfo(ctx, desc)
	if err != nil {
		return recordedAnswer{}, err
	}
	if len(info.Endpoint) != 1 {
		return recordedAnswer{}, fmt.Errorf("%d endpoints, want 1", len(info.Endpoint))
	}
	rec := recordedAnswer{Cmd: desc.Cmd}
	if rec.Info, err = proto.Marshal(info); err != nil {
		return recordedAnswer{}, err
	}
	stream, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return recordedAnswer{}, err
	}
	rec.Messages, err = recvAll(stream.Recv)
	return rec, err
}

// ceilingServer answers GetFlightInfo, DoGet and DoAction from recorded
// answers; every other method is BaseFlightServer's Unimplemented.
type ceilingServer struct {
	flight.BaseFlightServer
	infos    map[string]*flight.FlightInfo // by descriptor command
	messages map[string][][]byte           // by ticket
	actions  map[string][][]byte           // by actionKey
}

func (s *ceilingServer) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	msgs, ok := s.actions[actionKey(a.GetType(), a.GetBody())]
	if !ok {
		return status.Error(codes.NotFound, "ceiling: no recorded answer for this action")
	}
	return sendAll(stream, msgs)
}

func (s *ceilingServer) GetFlightInfo(_ context.Context, d *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if info, ok := s.infos[string(d.GetCmd())]; ok {
		return info, nil
	}
	return nil, status.Error(codes.NotFound, "ceiling: no recorded answer for this descriptor")
}

func (s *ceilingServer) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	msgs, ok := s.messages[string(t.GetTicket())]
	if !ok {
		return status.Error(codes.NotFound, "ceiling: no recorded answer for this ticket")
	}
	return sendAll(stream, msgs)
}

// marshaled is a message already in its wire form.
type marshaled []byte

// ceilingCodec is gRPC's proto codec, except that a marshaled message and
// a recorded FlightInfo go out as the bytes recorded: the ceiling marshals
// nothing while it serves.
type ceilingCodec struct {
	proto encoding.CodecV2
	infos map[*flight.FlightInfo][]byte
}

func (c ceilingCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case marshaled:
		return mem.BufferSlice{mem.SliceBuffer(m)}, nil
	case *flight.FlightInfo:
		if b, ok := c.infos[m]; ok {
			return mem.BufferSlice{mem.SliceBuffer(b)}, nil
		}
	}
	return c.proto.Marshal(v)
}

func (c ceilingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return c.proto.Unmarshal(data, v)
}

func (ceilingCodec) Name() string { return "proto" }

// serveCeiling is the child's whole job: it loads the recording in file and
// serves it on addr until it is stopped.
func serveCeiling(addr, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var answers []recordedAnswer
	if err := json.Unmarshal(b, &answers); err != nil {
		return fmt.Errorf("ceiling: read %s: %w", file, err)
	}
	s := &ceilingServer{infos: map[string]*flight.FlightInfo{}, messages: map[string][][]byte{}, actions: map[string][][]byte{}}
	codec := ceilingCodec{proto: encoding.GetCodecV2("proto"), infos: map[*flight.FlightInfo][]byte{}}
	for _, a := range answers {
		if a.Action != "" {
			s.actions[actionKey(a.Action, a.Body)] = a.Messages
			continue
		}
		info := &flight.FlightInfo{}
		if err := proto.Unmarshal(a.Info, info); err != nil {
			return fmt.Errorf("ceiling: recorded FlightInfo: %w", err)
		}
		ticket := string(info.Endpoint[0].Ticket.GetTicket())
		if _, dup := s.messages[ticket]; dup {
			return errors.New("ceiling: two recorded answers share a ticket")
		}
		s.infos[string(a.Cmd)], s.messages[ticket], codec.infos[info] = info, a.Messages, a.Info
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.ForceServerCodecV2(codec))
	flight.RegisterFlightServiceServer(srv, s)
	return srv.Serve(l)
}

// startCeiling starts the ceiling server in a child process serving
// answers, and waits for it to listen; the caller stops it.
func startCeiling(procs *procSet, answers []recordedAnswer) (*testenv.Process, string, error) {
	return startReplayChild(procs, "ceiling server", ceilingEnv, answers)
}

// startReplayChild starts this program again as a child serving payload
// (written to a file the child reads, named with its address in env) and
// waits for it to listen; the caller stops it. args are the child's flags.
func startReplayChild(procs *procSet, what, env string, payload any, args ...string) (*testenv.Process, string, error) {
	dir, err := os.MkdirTemp("", "lakebench-replay-")
	if err != nil {
		return nil, "", err
	}
	// The child reads the file before it listens.
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "payload.json")
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return nil, "", err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	child, err := procs.start([]string{env + "=" + addr + " " + file}, self, args...)
	if err != nil {
		return nil, "", err
	}
	if err := waitTCP(child, addr, 30*time.Second); err != nil {
		child.Stop()
		return nil, "", fmt.Errorf("%s: %w (%s)", what, err, strings.TrimSpace(child.Output()))
	}
	return child, addr, nil
}

// ceilingRatios are one request's per-round ratios, lake's req/s over the
// ceiling's in the same pair of rounds.
type ceilingRatios []float64

func (rs ceilingRatios) median() float64 {
	s := slices.Clone(rs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func (rs ceilingRatios) String() string {
	return fmt.Sprintf("%.2f (%.2f–%.2f)", rs.median(), slices.Min(rs), slices.Max(rs))
}

// benchCeiling registers c.peerTables tables of 20 columns in lake's local
// mode, records lake's answers to the three GetTables requests, serves them
// from the ceiling server and times both with the same client code, in
// alternating rounds.
func benchCeiling(c config, r *report, procs *procSet) error {
	tables := make([]namedSchema, c.peerTables)
	for i := range tables {
		tables[i] = namedSchema{fmt.Sprintf("t%05d", i), flight.SerializeSchema(catalogtest.WideSchema(i, 20), memory.DefaultAllocator)}
	}
	lake, err := startLocalLake(procs, "ceiling")
	if err != nil {
		return err
	}
	defer lake.stop()
	if err := lake.register(tables); err != nil {
		return err
	}
	lc, ctx, err := lake.client()
	if err != nil {
		return err
	}
	defer lc.Close()
	kinds := getTablesKinds(tables[len(tables)/2].name)
	answers := make([]recordedAnswer, len(kinds))
	for i, k := range kinds {
		if answers[i], err = record(ctx, lc.Client, (*pb.CommandGetTables)(k.opts())); err != nil {
			return fmt.Errorf("record %s: %w", k.name, err)
		}
	}
	child, addr, err := startCeiling(procs, answers)
	if err != nil {
		return err
	}
	defer child.Stop()
	// The same client code for both: arrow-go's Flight SQL client with the
	// same options, the same token sent to both (the ceiling ignores it).
	cc, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		return err
	}
	defer cc.Close()

	r.printf("## 5. The transport's ceiling: lake against a bare grpc-go server replaying lake's own messages\n\n")
	r.printf("%d tables × 20 columns registered in lake's local mode. Each request's FlightInfo and FlightData messages, as lake sent them, are served from memory, pre-marshaled, by a bare grpc-go Flight service in a child process (no Flight SQL layer, authentication or interceptors). Both are timed with the same client code (arrow-go's Flight SQL client: GetTables, then DoGet reading every record batch), alternated A/B (the first side alternating too), %d rounds of %v per side. The ratio is lake's req/s over the ceiling's in the same pair of rounds: median (range).\n\n", len(tables), c.ceilingRounds, c.ceilingRoundTime)
	r.printf("| request | FlightData messages | Arrow bytes | rows |\n|---|---|---|---|\n")
	for i, k := range kinds {
		ln, lrows, err := getTables(ctx, lc, k.opts())
		if err != nil {
			return fmt.Errorf("lake %s: %w", k.name, err)
		}
		cn, crows, err := getTables(ctx, cc, k.opts())
		if err != nil {
			return fmt.Errorf("ceiling %s: %w", k.name, err)
		}
		if ln != cn || lrows != crows || lrows == 0 {
			return fmt.Errorf("%s: lake answers %d rows in %d bytes, the ceiling %d rows in %d", k.name, lrows, ln, crows, cn)
		}
		r.printf("| %s | %d | %d | %d |\n", k.name, len(answers[i].Messages), ln, lrows)
	}
	r.printf("\n| request | workers | ceiling req/s | ceiling p50 ms | lake req/s | lake p50 ms | lake ÷ ceiling | server CPU µs per request, ceiling / lake |\n|---|---|---|---|---|---|---|---|\n")
	ratios := make([]ceilingRatios, len(kinds))
	for i, k := range kinds {
		for _, workers := range []int{1, 2} {
			var lakeAll, ceilAll sample
			var rs ceilingRatios
			// The serving process's CPU time over each side's rounds.
			var lakeCPU, ceilCPU float64
			for round := range c.ceilingRounds {
				var ls, cs sample
				sides := []struct {
					s      *sample
					client *flightsql.Client
					pid    int
					cpu    *float64
				}{{&ls, lc, lake.proc.Pid(), &lakeCPU}, {&cs, cc, child.Pid(), &ceilCPU}}
				if round%2 == 1 {
					sides[0], sides[1] = sides[1], sides[0]
				}
				for _, side := range sides {
					cl := side.client
					before := cpuSeconds(side.pid)
					if err := runFor(side.s, workers, c.ceilingRoundTime, func() (int64, error) { n, _, err := getTables(ctx, cl, k.opts()); return n, err }); err != nil {
						return fmt.Errorf("%s, %d workers: %w", k.name, workers, err)
					}
					*side.cpu += cpuSeconds(side.pid) - before
				}
				rs = append(rs, ls.reqPerSec()/cs.reqPerSec())
				lakeAll.merge(&ls)
				ceilAll.merge(&cs)
			}
			r.printf("| %s | %d | %.1f | %.2f | %.1f | %.2f | **%s** | %.0f / %.0f |\n", k.name, workers,
				ceilAll.reqPerSec(), ceilAll.pct(50), lakeAll.reqPerSec(), lakeAll.pct(50), rs,
				1e6*ceilCPU/float64(len(ceilAll.lat)), 1e6*lakeCPU/float64(len(lakeAll.lat)))
			ratios[i] = append(ratios[i], rs...)
		}
	}
	r.printf("\n")
	met := true
	var measured []string
	for _, rs := range ratios {
		met = met && rs.median() >= 0.95
		measured = append(measured, rs.String())
	}
	r.target("lake ÷ grpc-go ceiling (same messages, same client, same run), GetTables with schemas / names only / one table; median (range) over both worker counts, met when each median is", "0.96–1.05 / 0.87–0.95 / —", "≥ 0.95 each", met, "%s", strings.Join(measured, " / "))
	return nil
}
