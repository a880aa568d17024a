package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
)

// Authenticator turns a bearer token into a tenant (auth.Validator).
type Authenticator interface {
	// Tenant returns the tenant a token was issued to, or an error when
	// the token is not valid. An empty token must fail (it names no
	// tenant), as must a token whose tenant claim is empty or not a valid
	// tenant name: every request's tenant comes from here alone.
	Tenant(token string) (string, error)
}

// Limits of the gRPC server (NewGRPCServer's defaults; opts may override).
const (
	// MaxRecvMsgSize bounds a request message. Flight SQL requests are
	// commands of a few hundred bytes; a GetSqlInfo naming every id twice
	// is under 1 KiB.
	MaxRecvMsgSize = 1 << 20
	// MaxConcurrentStreams bounds the calls in flight on one connection.
	MaxConcurrentStreams = 256
	// MaxConnectionIdle closes a connection with no call for this long.
	MaxConnectionIdle = 15 * time.Minute
	// KeepaliveMinTime is the shortest client ping interval tolerated;
	// clients that ping more often are disconnected (GOAWAY).
	KeepaliveMinTime = 10 * time.Second
)

// streamWorkers is the number of gRPC stream workers NewGRPCServer starts:
// four per GOMAXPROCS.
func streamWorkers() uint32 { return uint32(4 * runtime.GOMAXPROCS(0)) }

// NewGRPCServer returns a gRPC server serving svc as Flight SQL behind
// bearer-token authentication, and the gRPC health service (which needs no
// token). It bounds request size, streams per connection and idle time,
// enforces a keepalive policy, and turns a handler panic into INTERNAL for
// that call alone. Every Flight call runs under a server-side deadline of
// the Service's RequestTimeout (the health service's Watch streams are
// exempt). opts are added after those defaults (TLS credentials,
// other limits). Requests are counted in svc's Metrics, when it has them.
func NewGRPCServer(svc *Service, authn Authenticator, hs *health.Server, log *slog.Logger, opts ...grpc.ServerOption) *grpc.Server {
	if log == nil {
		log = slog.Default()
	}
	c := &calls{authn: authn, log: log, metrics: svc.opts.Metrics, timeout: svc.opts.RequestTimeout}
	defaults := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: MaxConnectionIdle}),
		// Calls run on long-lived workers (gRPC starts a goroutine for a
		// call only when every worker is busy), so a call does not grow a
		// new goroutine's stack through the Flight SQL and IPC layers
		// each time: that copying was a fifth of the server's CPU.
		grpc.NumStreamWorkers(streamWorkers()),
	}
	opts = append(defaults, opts...)
	opts = append(opts, grpc.UnaryInterceptor(c.unary), grpc.StreamInterceptor(c.stream),
		grpc.ForceServerCodecV2(newWireCodec()))
	srv := grpc.NewServer(opts...)
	flight.RegisterFlightServiceServer(srv, newFlightServer(svc, flightsql.NewFlightServer(svc)))
	healthpb.RegisterHealthServer(srv, hs)
	return srv
}

// calls is the one interceptor every call passes, unary and streaming. In
// one frame each, it
//   - turns a panic in the handler into INTERNAL for that call, logged with
//     its stack (the server and every other call go on);
//   - gives every Flight call a server-side deadline of timeout (or the
//     client's own, when sooner), so work driven by a request stops at
//     every context check however long the client would wait;
//   - authenticates every Flight call ("authorization: Bearer <jwt>", or a
//     user and password as the Handshake takes them, on any call) and puts
//     the token's tenant in its context;
//   - counts requests: each DoGet under its Flight SQL command and each
//     DoAction under its action type (actionName), both timed, and each
//     other call that fails (rejected tokens and panics included).
//
// The health service's calls are only recovered: no deadline (its Watch
// streams stay open), no token.
type calls struct {
	authn   Authenticator
	log     *slog.Logger
	metrics *Metrics
	timeout time.Duration
}

func exempt(method string) bool { return strings.HasPrefix(method, "/grpc.health.v1.Health/") }

// recovered, deferred, turns a panic into INTERNAL in *err.
func (c *calls) recovered(ctx context.Context, method string, err *error) {
	if p := recover(); p != nil {
		c.panicked(ctx, method, p, err)
	}
}

func (c *calls) panicked(ctx context.Context, method string, p any, err *error) {
	c.log.ErrorContext(ctx, "flight sql handler panicked", slog.String("method", method),
		slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
	*err = status.Error(codes.Internal, "internal error")
}

// authenticate reads "authorization: Bearer <jwt>", or "authorization:
// Basic base64(tenant:jwt)" as the Handshake takes it (handshake.go), and
// returns ctx with the token's tenant. For Basic it also returns the header
// to answer with (the bearer token); for Bearer, nil. A rejected bearer
// token gets one generic message whatever failed; rejected Basic
// credentials get the Handshake's answers.
func (c *calls) authenticate(ctx context.Context, method string) (context.Context, metadata.MD, error) {
	// ValueFromIncomingContext reads the one key without copying the
	// whole metadata map, as FromIncomingContext does.
	var token string
	if vals := metadata.ValueFromIncomingContext(ctx, "authorization"); len(vals) == 1 {
		if user, password, ok := basicCredentials(vals[0]); ok {
			tenant, err := c.basicTenant(ctx, method, user, password)
			if err != nil {
				return nil, nil, err
			}
			return WithTenant(ctx, tenant), bearerHeader(password), nil
		}
		token, _ = auth.BearerToken(vals[0])
	}
	tenant, err := c.authn.Tenant(token)
	if err != nil {
		c.reject(ctx, method, err)
		return nil, nil, status.Error(codes.Unauthenticated, "unauthenticated: send a valid bearer token")
	}
	return WithTenant(ctx, tenant), nil, nil
}

func (c *calls) observe(cmd string, timed bool, start time.Time, err error) {
	if c.metrics != nil {
		c.metrics.observe(cmd, timed, start, err)
	}
}

func (c *calls) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	if exempt(info.FullMethod) {
		defer c.recovered(ctx, info.FullMethod, &err)
		return h(ctx, req)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			c.panicked(ctx, info.FullMethod, p, &err)
		}
		// A successful GetFlightInfo is counted at its DoGet; a failed call
		// under its command (read only now, for the failures).
		if err != nil {
			cmd := rpcName(info.FullMethod)
			if d, ok := req.(*flight.FlightDescriptor); ok {
				cmd = commandName(d.GetCmd())
			}
			c.observe(cmd, false, start, err)
		}
	}()
	var answer metadata.MD
	if ctx, answer, err = c.authenticate(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	if answer != nil {
		if err := grpc.SetHeader(ctx, answer); err != nil {
			return nil, err
		}
	}
	return h(ctx, req)
}

// tenantStream carries the call's context (its deadline, then its tenant)
// and notes the command of the ticket, or the type of the action, the
// handler reads.
type tenantStream struct {
	grpc.ServerStream
	ctx context.Context
	cmd string
}

func (s *tenantStream) Context() context.Context { return s.ctx }

func (s *tenantStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		switch m := m.(type) {
		case *flight.Ticket:
			s.cmd = commandName(m.GetTicket())
		case *flight.Action:
			s.cmd = actionName(m.GetType())
		}
	}
	return err
}

const (
	doGetMethod    = "/arrow.flight.protocol.FlightService/DoGet"
	doActionMethod = "/arrow.flight.protocol.FlightService/DoAction"
)

func (c *calls) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	if exempt(info.FullMethod) {
		defer c.recovered(ss.Context(), info.FullMethod, &err)
		return h(srv, ss)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ss.Context(), c.timeout)
	defer cancel()
	doGet, doAction := info.FullMethod == doGetMethod, info.FullMethod == doActionMethod
	ts := &tenantStream{ServerStream: ss, ctx: ctx, cmd: rpcName(info.FullMethod)}
	defer func() {
		if p := recover(); p != nil {
			c.panicked(ctx, info.FullMethod, p, &err)
		}
		if doGet || doAction || err != nil {
			c.observe(ts.cmd, doGet || doAction, start, err)
		}
	}()
	if info.FullMethod == handshakeMethod {
		return c.handshake(srv, ts, h)
	}
	tctx, answer, err := c.authenticate(ctx, info.FullMethod)
	if err != nil {
		// Read the ticket or action only to name the rejected request.
		if doGet {
			_ = ts.RecvMsg(new(flight.Ticket))
		} else if doAction {
			_ = ts.RecvMsg(new(flight.Action))
		}
		return err
	}
	if answer != nil {
		if err := ts.SetHeader(answer); err != nil {
			return err
		}
	}
	ts.ctx = tctx
	return h(srv, ts)
}

// HealthHandler serves /healthz alone: 200 once a snapshot is loaded, 503
// before, 503 while the last successful poll is older than the source's
// MaxStaleness (the snapshot still serves requests), and 503 while it
// serves no tenant (each one's segment failed to load). The 503's body is a
// short reason; a 200's says "ok", and how many tenants are degraded when
// some are (their names are in /status). It tells a load balancer nothing
// else.
func HealthHandler(src *Source) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz(src))
	return mux
}

func healthz(src *Source) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ok, detail := src.Health(time.Now())
		switch {
		case !ok:
			http.Error(w, detail, http.StatusServiceUnavailable)
		case detail != "":
			_, _ = fmt.Fprintf(w, "ok: %s\n", detail)
		default:
			_, _ = w.Write([]byte("ok\n"))
		}
	}
}

// AdminHandler serves /healthz, /status (the source's Status as JSON: the
// blob's location, errors, catalog-wide counts, the last successful poll
// and whether it is stale) and /metrics (Prometheus, from g). Serve it
// only where operators reach it.
func AdminHandler(src *Source, g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz(src))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(src.Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}
