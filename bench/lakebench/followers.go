package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/wire"
)

// followerTenant is the tenant measureFollowerMisses writes and follows.
const followerTenant = "follow"

// measureFollowerMisses runs lake local in this process (a data folder of
// its own, loopback ports, refresh as `lake local` runs it: 200 ms after a
// write), writers goroutines registering new tables of one tenant through
// the registration API for dur, and one follower paging lake.changes with
// its cursor all the while (no quota stops the writers), as `lake changes --follow` does. When the
// writers stop it refreshes once more and lets the follower catch up, then
// counts the tables created (total) that the follower was never given
// (missed). Every table is created once and never changed, so each is one
// change the feed must deliver.
func measureFollowerMisses(ctx context.Context, writers int, dur time.Duration) (missed, total int, err error) {
	dataDir, err := os.MkdirTemp("", "lakebench-follow-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dataDir)
	in, err := local.Start(ctx, local.Config{DataDir: dataDir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0",
		HTTPListen: "-", BrowserListen: "-", Quota: catalog.Quota{MaxTables: 1 << 30, MaxBytes: 1 << 40},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	token, err := in.Token(followerTenant, 2*time.Hour)
	if err != nil {
		return 0, 0, err
	}
	schema := flight.SerializeSchema(catalogtest.WideSchema(1, 20), memory.DefaultAllocator)
	api := in.Endpoints().API + "/v1/tenants/" + followerTenant + "/namespaces/main/tables"
	client := &http.Client{Timeout: 30 * time.Second}
	register := func(name string) (bool, error) {
		body, err := json.Marshal(map[string]any{"name": name, "location": "/bench/" + name, "schema": base64.StdEncoding.EncodeToString(schema)})
		if err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, "POST", api, bytes.NewReader(body))
		if err != nil {
			return false, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Lake-Request", "1") // local mode's guard
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		switch resp.StatusCode {
		case http.StatusCreated:
			return true, nil
		case http.StatusConflict, http.StatusServiceUnavailable: // the quota item under many writers; counted as not created
			return false, nil
		}
		return false, fmt.Errorf("register %s: %d %s", name, resp.StatusCode, msg)
	}

	var (
		mu      sync.Mutex
		created []string
		wg      sync.WaitGroup
		werr    error
	)
	wctx, stop := context.WithTimeout(ctx, dur)
	defer stop()
	for w := range writers {
		wg.Go(func() {
			for i := 0; wctx.Err() == nil; i++ {
				name := "w" + strconv.Itoa(w) + "_" + strconv.Itoa(i)
				ok, err := register(name)
				mu.Lock()
				if err != nil && werr == nil && wctx.Err() == nil {
					werr = err
				}
				if ok {
					created = append(created, name)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()

	d, err := flightclient.Dial(in.Endpoints().FlightSQL, token)
	if err != nil {
		stop()
		<-writing
		return 0, 0, err
	}
	defer d.Close()
	seen := map[string]bool{}
	cursor := ""
	// catchUp pages until a page comes back short.
	catchUp := func() error {
		for {
			page, err := d.Changes(ctx, cursor, wire.MaxChangesLimit)
			if err != nil {
				return err
			}
			for _, c := range page.Changes {
				seen[c.Table] = true
			}
			cursor = page.Next
			if len(page.Changes) < wire.MaxChangesLimit {
				return nil
			}
		}
	}
	for done := false; !done; {
		select {
		case <-writing:
			done = true
		case <-time.After(100 * time.Millisecond):
		}
		if err := catchUp(); err != nil {
			stop()
			<-writing
			return 0, 0, err
		}
	}
	if werr != nil {
		return 0, 0, werr
	}
	if _, err := in.Refresh(ctx); err != nil {
		return 0, 0, err
	}
	if err := catchUp(); err != nil {
		return 0, 0, err
	}
	for _, name := range created {
		if !seen[name] {
			missed++
		}
	}
	return missed, len(created), nil
}
