package discovery

import (
	"testing"

	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// commandNameByDecoding is commandName the slow way, decoding the Any with
// the protobuf runtime: the reference commandName must agree with.
func commandNameByDecoding(b []byte) string {
	var a anypb.Any
	if err := proto.Unmarshal(b, &a); err != nil {
		return "invalid"
	}
	if name, ok := commandNames[string(a.MessageName())]; ok {
		return name
	}
	return "unknown"
}

func anyBytes(t testing.TB, m proto.Message) []byte {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCommandName(t *testing.T) {
	t.Parallel()
	pattern := "t%"
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"GetTables", anyBytes(t, &pb.CommandGetTables{TableNameFilterPattern: &pattern, IncludeSchema: true}), "GetTables"},
		{"statement ticket", anyBytes(t, &pb.TicketStatementQuery{StatementHandle: []byte("h")}), "StatementQuery"},
		{"GetSqlInfo", anyBytes(t, &pb.CommandGetSqlInfo{Info: []uint32{1, 2}}), "GetSqlInfo"},
		{"another message", anyBytes(t, &pb.ActionClosePreparedStatementRequest{}), "unknown"},
		{"empty", nil, "unknown"},
		{"truncated", []byte{0x0a, 0x20, 'x'}, "invalid"},
		{"bad tag", []byte{0xff}, "invalid"},
		{"type URL not UTF-8", []byte{0x0a, 0x02, 0xff, 0xfe}, "invalid"},
		{"no slash", []byte("\x0a\x2carrow.flight.protocol.sql.CommandGetCatalogs"), "GetCatalogs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := commandName(tt.b); got != tt.want {
				t.Errorf("commandName = %q, want %q", got, tt.want)
			}
			if ref := commandNameByDecoding(tt.b); ref != tt.want {
				t.Errorf("the protobuf runtime names it %q, the test wants %q", ref, tt.want)
			}
		})
	}
}

// commandName reads tickets and descriptors from any client: it must never
// panic and must name every input as the protobuf runtime would.
func FuzzCommandName(f *testing.F) {
	pattern := "%"
	f.Add(anyBytes(f, &pb.CommandGetTables{TableNameFilterPattern: &pattern}))
	f.Add(anyBytes(f, &pb.TicketStatementQuery{StatementHandle: []byte("h")}))
	f.Add([]byte{0x0a, 0x02, 0xff, 0xfe})
	f.Add([]byte{0x0b, 0x0c})
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := commandName(b), commandNameByDecoding(b); got != want {
			t.Fatalf("commandName(%x) = %q, the protobuf runtime says %q", b, got, want)
		}
	})
}
