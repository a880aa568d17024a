package flightclient

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

func TestEscapeLike(t *testing.T) {
	tests := []struct{ in, want string }{
		{"orders", "orders"},
		{"100%_done", `100\%\_done`},
		{`a\b`, `a\\b`},
		{"販売", "販売"},
	}
	for _, tt := range tests {
		if got := EscapeLike(tt.in); got != tt.want {
			t.Errorf("EscapeLike(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A discovery address without a scheme is TLS unless its host is
// loopback; grpc:// is plaintext and grpc+tls:// TLS wherever they point;
// anything else is refused.
func TestParseEndpointDefaultsToTLSUnlessLoopback(t *testing.T) {
	tests := []struct {
		addr    string
		target  string
		tls     bool
		wantErr bool
	}{
		{addr: "discovery.example.com:443", target: "discovery.example.com:443", tls: true},
		{addr: "lake-nlb-123.elb.eu-west-1.amazonaws.com:50051", target: "lake-nlb-123.elb.eu-west-1.amazonaws.com:50051", tls: true},
		{addr: "10.0.1.17:50051", target: "10.0.1.17:50051", tls: true},
		{addr: "[2001:db8::1]:50051", target: "[2001:db8::1]:50051", tls: true},
		{addr: "discovery.example.com", target: "discovery.example.com", tls: true},
		{addr: "localhost.example.com:50051", target: "localhost.example.com:50051", tls: true},
		{addr: "127.0.0.1:50051", target: "127.0.0.1:50051"},
		{addr: "127.1.2.3:50051", target: "127.1.2.3:50051"},
		{addr: "localhost:50051", target: "localhost:50051"},
		{addr: "LOCALHOST:50051", target: "LOCALHOST:50051"},
		{addr: "[::1]:50051", target: "[::1]:50051"},
		{addr: "[::ffff:127.0.0.1]:50051", target: "[::ffff:127.0.0.1]:50051"},
		{addr: ":50051", target: ":50051"},
		{addr: "grpc://discovery.example.com:50051", target: "discovery.example.com:50051"},
		{addr: "grpc://127.0.0.1:50051", target: "127.0.0.1:50051"},
		{addr: "GRPC://127.0.0.1:50051", target: "127.0.0.1:50051"},
		{addr: "grpc+tls://discovery.example.com:443", target: "discovery.example.com:443", tls: true},
		{addr: "grpc+tls://127.0.0.1:50051", target: "127.0.0.1:50051", tls: true},
		{addr: "http://discovery.example.com:443", wantErr: true},
		{addr: "https://discovery.example.com:443", wantErr: true},
		{addr: "grpc://", wantErr: true},
		{addr: "grpc+tls://discovery.example.com:443/path", wantErr: true},
		{addr: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := ParseEndpoint(tt.addr)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseEndpoint(%q) = %+v, want an error", tt.addr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEndpoint(%q): %v", tt.addr, err)
			}
			if want := (Endpoint{Target: tt.target, TLS: tt.tls}); got != want {
				t.Fatalf("ParseEndpoint(%q) = %+v, want %+v", tt.addr, got, want)
			}
		})
	}
}

// What Dial actually sends: the first bytes a listener receives are a TLS
// handshake record (0x16) or the HTTP/2 preface of plaintext gRPC. A bare
// address of this machine's non-loopback IP (when it has one) gets TLS.
func TestDialSpeaksTLSUnlessLoopbackOrGRPC(t *testing.T) {
	type tc struct {
		name string
		ip   string
		addr func(hostport string) string
		tls  bool
	}
	tests := []tc{
		{"bare loopback", "127.0.0.1", func(hp string) string { return hp }, false},
		{"grpc loopback", "127.0.0.1", func(hp string) string { return "grpc://" + hp }, false},
		{"grpc+tls loopback", "127.0.0.1", func(hp string) string { return "grpc+tls://" + hp }, true},
	}
	if ip := nonLoopbackIP(t); ip != "" {
		tests = append(tests,
			tc{"bare non-loopback", ip, func(hp string) string { return hp }, true},
			tc{"grpc non-loopback", ip, func(hp string) string { return "grpc://" + hp }, false},
		)
	} else {
		t.Log("no non-loopback IPv4 address on this machine: the bare non-loopback case runs only in ParseEndpoint's test")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", net.JoinHostPort(tt.ip, "0"))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			first := make(chan byte, 1)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				b := make([]byte, 1)
				if _, err := io.ReadFull(conn, b); err == nil {
					first <- b[0]
				}
			}()
			c, err := Dial(tt.addr(ln.Addr().String()), "token")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			go c.Tables(ctx, &flightsql.GetTablesOpts{}) // fails: the listener never answers
			select {
			case b := <-first:
				if got := b == 0x16; got != tt.tls {
					t.Fatalf("first byte %#x: TLS = %v, want %v", b, got, tt.tls)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Dial sent nothing")
			}
		})
	}
}

// nonLoopbackIP returns an IPv4 address of this machine that is not
// loopback, or "" when it has none.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
