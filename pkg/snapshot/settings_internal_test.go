package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A segment's settings are framed by their length, end the segment and
// are at most MaxSettingsBytes; anything else is a corrupt segment, with
// every address and checksum right.
func TestSettingsFramingIsChecked(t *testing.T) {
	t.Parallel()
	table := []Table{{Namespace: "n", Name: "t", Location: "/x"}}
	streams, _, err := encodePayload(memory.DefaultAllocator, table, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	streams = streams[:len(streams)-8] // the three streams, without the settings
	settings := func(n uint64, b []byte) []byte {
		return append(binary.LittleEndian.AppendUint64(bytes.Clone(streams), n), b...)
	}
	ok := []byte(`{"allowed_prefixes":["s3://b/p/"]}`)
	big := bytes.Repeat([]byte("x"), MaxSettingsBytes+1)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    []byte // the settings read; nil with corrupt
		corrupt bool
	}{
		{"settings", settings(uint64(len(ok)), ok), ok, false},
		{"none", settings(0, nil), nil, false},
		{"at the bound", settings(MaxSettingsBytes, big[:MaxSettingsBytes]), big[:MaxSettingsBytes], false},
		{"before version 7: the streams alone", bytes.Clone(streams), nil, false},
		{"over the bound", settings(uint64(len(big)), big), nil, true},
		{"a length past the end", settings(uint64(len(ok))+1, ok), nil, true},
		{"bytes after the settings", settings(uint64(len(ok))-1, ok), nil, true},
		{"a huge length", settings(1<<63, ok), nil, true},
		{"a truncated length", append(bytes.Clone(streams), 3, 0, 0, 0), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Open(craft(t, Entry{Tenant: "acme", Tables: 1, SchemaUnavailable: 1}, tc.payload), ReaderOptions{})
			if err != nil {
				t.Fatalf("Open: %v; the crafted blob should pass the manifest's checks", err)
			}
			seg, err := r.Tenant(context.Background(), "acme")
			if got := errors.Is(err, ErrCorrupt); got != tc.corrupt {
				t.Fatalf("Tenant: %v, want corrupt %v", err, tc.corrupt)
			}
			if err != nil {
				return
			}
			defer seg.Release()
			if got := seg.Settings(); !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("settings %q, want %q", got, tc.want)
			}
		})
	}
}
