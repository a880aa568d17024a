package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// damagedOutcome is what measureDamagedSegment saw.
type damagedOutcome struct {
	// tenants registered; served, how many a new task answered with one
	// tenant's segment damaged; damaged, what that tenant was answered.
	tenants, served int
	damaged         string
	// repaired: the damaged tenant answered again after one refresh run.
	repaired bool
}

// measureDamagedSegment runs lake local in this process with tenants
// tenants of two tables each, stops it, overwrites one tenant's segment
// file with bytes that no longer match its address, starts a new discovery
// task (the real binary) on that blob and counts the tenants it answers,
// then starts lake local again, runs one refresh (what the schedule or the
// next write does) and asks the damaged tenant again.
func measureDamagedSegment(ctx context.Context, procs *procSet, discoveryBin string, tenants int) (damagedOutcome, error) {
	out := damagedOutcome{tenants: tenants}
	dataDir, err := os.MkdirTemp("", "lakebench-damaged-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dataDir)
	cfg := local.Config{DataDir: dataDir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	names := make([]string, tenants)
	for i := range names {
		names[i] = fmt.Sprintf("tenant%02d", i)
	}
	in, err := local.Start(ctx, cfg)
	if err != nil {
		return out, err
	}
	schema := base64.StdEncoding.EncodeToString(flight.SerializeSchema(catalogtest.WideSchema(1, 20), memory.DefaultAllocator))
	for _, tn := range names {
		token, err := in.Token(tn, time.Hour)
		if err != nil {
			in.Close()
			return out, err
		}
		for _, tbl := range []string{"orders", "customers"} {
			body, _ := json.Marshal(map[string]any{"name": tbl, "location": "/bench/" + tbl, "schema": schema})
			req, _ := http.NewRequestWithContext(ctx, "POST", in.Endpoints().API+"/v1/tenants/"+tn+"/namespaces/main/tables", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				in.Close()
				return out, err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				in.Close()
				return out, fmt.Errorf("register %s/%s: %d", tn, tbl, resp.StatusCode)
			}
		}
	}
	if _, err := in.Refresh(ctx); err != nil {
		in.Close()
		return out, err
	}
	in.Close()

	// Damage the last tenant's segment: same length, other bytes.
	blob := filepath.Join(dataDir, local.BlobFile)
	manifest, err := os.ReadFile(blob)
	if err != nil {
		return out, err
	}
	r, err := snapshot.Open(manifest, snapshot.ReaderOptions{})
	if err != nil {
		return out, err
	}
	victim := names[len(names)-1]
	e, ok := r.Entry(victim)
	if !ok {
		return out, fmt.Errorf("the manifest has no tenant %s", victim)
	}
	seg := blob + blobstore.SegmentsSuffix + hex.EncodeToString(e.Address[:])
	b, err := os.ReadFile(seg)
	if err != nil {
		return out, err
	}
	for i := range b {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		return out, err
	}

	// A new discovery task on the damaged blob, refresh nowhere near.
	secret, err := os.ReadFile(filepath.Join(dataDir, "dev-secret"))
	if err != nil {
		return out, err
	}
	d, err := startDiscoveryOn(procs, discoveryBin, bytes.TrimSpace(secret), blob)
	if err != nil {
		return out, err
	}
	defer d.stop()
	askAt := func(addr, tn string, token func(string) (string, error)) error {
		tok, err := token(tn)
		if err != nil {
			return err
		}
		cl, err := flightclient.Dial(addr, tok)
		if err != nil {
			return err
		}
		defer cl.Close()
		tables, err := cl.Tables(ctx, &flightsql.GetTablesOpts{})
		if err == nil && len(tables) != 2 {
			err = fmt.Errorf("%s: %d tables, want 2", tn, len(tables))
		}
		return err
	}
	devToken := func(tn string) (string, error) {
		return auth.IssueHS256(bytes.TrimSpace(secret), auth.TokenClaims{Tenant: tn, TTL: time.Hour, Now: time.Now()})
	}
	for _, tn := range names {
		err := askAt(d.flightAddr, tn, devToken)
		switch {
		case err == nil:
			out.served++
		case tn == victim:
			out.damaged = fmt.Sprintf("%s: %s", status.Code(err), status.Convert(err).Message())
		}
	}
	d.stop()

	// lake local again: its refresh repairs the segment.
	in, err = local.Start(ctx, cfg)
	if err != nil {
		return out, fmt.Errorf("lake local again: %w", err)
	}
	defer in.Close()
	ask := func(tn string) error {
		return askAt(in.Endpoints().FlightSQL, tn, func(tn string) (string, error) { return in.Token(tn, time.Hour) })
	}
	if _, err := in.Refresh(ctx); err != nil {
		return out, fmt.Errorf("refresh: %w", err)
	}
	// The refresh published; discovery picks it up at its next poll.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ask(victim) == nil {
			out.repaired = true
			break
		}
	}
	return out, nil
}
