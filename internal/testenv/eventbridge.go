package testenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// EventBridge is an EventBridge endpoint that records what PutEvents is
// sent (AWS JSON 1.1, X-Amz-Target AWSEvents.PutEvents) and accepts it:
// no EventBridge emulator runs on these machines (LocalStack needs
// Docker), so the request the real SDK client sends is checked here, on
// the wire. Point a client at URL (AWS_ENDPOINT_URL_EVENTBRIDGE).
type EventBridge struct {
	URL     string
	mu      sync.Mutex
	entries []EventEntry
}

// EventEntry is one PutEvents entry as sent.
type EventEntry struct {
	EventBusName, Source, DetailType, Detail string
}

// StartEventBridge starts an EventBridge endpoint for tb.
func StartEventBridge(tb testing.TB) *EventBridge {
	e := &EventBridge{}
	srv := httptest.NewServer(e)
	tb.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}

// Entries returns the entries put so far.
func (e *EventBridge) Entries() []EventEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]EventEntry(nil), e.entries...)
}

func (e *EventBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		http.Error(w, `{"__type":"UnknownOperationException"}`, http.StatusBadRequest)
		return
	}
	var in struct{ Entries []EventEntry }
	if err := json.Unmarshal(b, &in); err != nil {
		http.Error(w, `{"__type":"SerializationException"}`, http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.entries = append(e.entries, in.Entries...)
	e.mu.Unlock()
	ids := make([]string, len(in.Entries))
	for i := range ids {
		ids[i] = fmt.Sprintf(`{"EventId":"%d"}`, i)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fmt.Fprintf(w, `{"FailedEntryCount":0,"Entries":[%s]}`, strings.Join(ids, ","))
}
