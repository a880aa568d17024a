package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/auth"
)

// ---- 1. discovery against the peer ----

func benchPeer(c config, r *report, procs *procSet) (string, error) {
	peerBin, lakeBin := "bin/sqlite_flightsql_server", "bin/lake"
	for _, b := range []string{peerBin, lakeBin} {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("%s missing: run `make bench-tools`", b)
		}
	}
	peerPort := freePort()
	peer, err := procs.start(nil, peerBin, "-host", "127.0.0.1", "-port", strconv.Itoa(peerPort))
	if err != nil {
		return "", err
	}
	defer peer.Stop()
	peerAddr := "127.0.0.1:" + strconv.Itoa(peerPort)
	if err := waitTCP(peer, peerAddr, 30*time.Second); err != nil {
		return "", err
	}
	// The peer answers GetTables in one record batch, over gRPC's default
	// 4 MiB receive limit at 1,000 tables: both clients get a 256 MiB limit.
	bigMessages := grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20))
	pc, err := flightsql.NewClient(peerAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		return "", err
	}
	defer pc.Close()
	ctx := context.Background()
	types := []string{"INTEGER", "TEXT", "REAL", "BLOB"}
	for i := range c.peerTables {
		var cols []string
		for j := range 20 {
			cols = append(cols, fmt.Sprintf("c%02d_%d %s", j, i%7, types[(i+j)%4]))
		}
		if _, err := pc.ExecuteUpdate(ctx, fmt.Sprintf("CREATE TABLE t%05d (%s)", i, strings.Join(cols, ", "))); err != nil {
			return "", fmt.Errorf("peer: create table: %w", err)
		}
	}
	// The peer's own answer gives the exact schemas lake registers.
	info, err := pc.GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		return "", err
	}
	rdr, err := pc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return "", err
	}
	type tbl struct {
		name string
		ipc  []byte
	}
	var tables []tbl
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			tables = append(tables, tbl{rec.Column(2).(*array.String).Value(i), bytes.Clone(rec.Column(4).(*array.Binary).Value(i))})
		}
	}
	err = rdr.Err()
	rdr.Release()
	if err != nil || len(tables) < c.peerTables {
		return "", fmt.Errorf("peer GetTables: %d tables, %v", len(tables), err)
	}

	dataDir, err := os.MkdirTemp("", "lakebench-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dataDir)
	apiAddr, flightAddr := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
	lake, err := procs.start(nil, lakeBin, "local", "--no-demo", "--data-dir", dataDir, "--api-listen", apiAddr, "--flight-listen", flightAddr, "--http-listen", "-")
	if err != nil {
		return "", err
	}
	defer lake.Stop()
	if err := waitTCP(lake, apiAddr, 60*time.Second); err != nil {
		return "", err
	}
	secret, err := os.ReadFile(filepath.Join(dataDir, "dev-secret"))
	if err != nil {
		return "", err
	}
	token, _ := auth.IssueHS256(bytes.TrimSpace(secret), "", "bench", "", "", 2*time.Hour, time.Now())
	var g errgroup.Group
	g.SetLimit(8)
	for _, t := range tables {
		g.Go(func() error {
			body, _ := json.Marshal(map[string]any{"name": t.name, "location": "/bench/" + t.name, "schema": base64.StdEncoding.EncodeToString(t.ipc)})
			req, _ := http.NewRequest("POST", "http://"+apiAddr+"/v1/tenants/bench/namespaces/main/tables", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("X-Lake-Request", "1") // local mode's guard
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				return fmt.Errorf("register %s: %d %s", t.name, resp.StatusCode, msg)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	req, _ := http.NewRequest("POST", "http://"+apiAddr+"/v1/refresh", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Lake-Request", "1")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		return "", err
	} else {
		resp.Body.Close()
	}
	lc, err := flightsql.NewClient(flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		return "", err
	}
	defer lc.Close()
	lctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	if _, rows, err := getTables(lctx, lc, &flightsql.GetTablesOpts{}); err != nil || rows != len(tables) {
		return "", fmt.Errorf("lake lists %d tables (%v), want %d", rows, err, len(tables))
	}

	one := tables[len(tables)/2].name
	kinds := []struct {
		name string
		opts func() *flightsql.GetTablesOpts
	}{
		{"GetTables with schemas (all)", func() *flightsql.GetTablesOpts { return &flightsql.GetTablesOpts{IncludeSchema: true} }},
		{"GetTables without schemas", func() *flightsql.GetTablesOpts { return &flightsql.GetTablesOpts{} }},
		{"one exact table with schema", func() *flightsql.GetTablesOpts {
			return &flightsql.GetTablesOpts{TableNameFilterPattern: &one, IncludeSchema: true}
		}},
	}
	r.printf("## 1. Discovery against arrow-go's SQLite Flight SQL server (%s)\n\n", arrowVersion())
	r.printf("%d tables × 20 columns created in the peer through ExecuteUpdate; the schemas it reports are registered unchanged in lake's local mode, so both answer with the same schema bytes. Same client, alternated A/B, %d rounds of %v per side.\n\n", len(tables), c.rounds, c.roundTime)
	r.printf("| request | workers | peer req/s | peer p50 ms | peer p99 ms | lake req/s | lake p50 ms | lake p99 ms | lake/peer |\n|---|---|---|---|---|---|---|---|---|\n")
	var yardstick sample
	ratios := map[string][]float64{}
	for _, k := range kinds {
		for _, workers := range []int{1, 2} {
			var ps, ls sample
			for range c.rounds {
				if err := runFor(&ps, workers, c.roundTime, func() (int64, error) { n, _, err := getTables(ctx, pc, k.opts()); return n, err }); err != nil {
					return "", fmt.Errorf("peer %s: %w", k.name, err)
				}
				if err := runFor(&ls, workers, c.roundTime, func() (int64, error) { n, _, err := getTables(lctx, lc, k.opts()); return n, err }); err != nil {
					return "", fmt.Errorf("lake %s: %w", k.name, err)
				}
			}
			r.printf("| %s | %d | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f | **%.1f×** |\n", k.name, workers,
				ps.reqPerSec(), ps.pct(50), ps.pct(99), ls.reqPerSec(), ls.pct(50), ls.pct(99), ls.reqPerSec()/ps.reqPerSec())
			ratios[k.name] = append(ratios[k.name], ls.reqPerSec()/ps.reqPerSec())
			if k.name == kinds[0].name && workers == 1 {
				yardstick = ls
			}
		}
	}
	ratioRange := func(rs []float64) (string, float64) {
		return fmt.Sprintf("%.1f–%.1f×", slices.Min(rs), slices.Max(rs)), slices.Min(rs)
	}
	txt, lo := ratioRange(ratios[kinds[0].name])
	r.target(fmt.Sprintf("GetTables with schemas, %d tables, vs the SQLite peer", len(tables)), "33–39×", "≥ 60×", lo >= 60, "%s", txt)
	txt, lo = ratioRange(ratios[kinds[1].name])
	r.target(fmt.Sprintf("GetTables names only, %d tables, vs the peer", len(tables)), "3.5–5.6×", "≥ 8×", lo >= 8, "%s", txt)
	// 5. The yardstick: bytes moved per response against a plain copy.
	perResp := float64(yardstick.bytes) / float64(len(yardstick.lat))
	served := perResp * yardstick.reqPerSec()
	src := make([]byte, int(perResp))
	dst := make([]byte, len(src))
	copies := 0
	start := time.Now()
	for time.Since(start) < time.Second {
		copy(dst, src)
		copies++
	}
	copyRate := float64(copies) * perResp / time.Since(start).Seconds()
	r.printf("\n")
	var y strings.Builder
	fmt.Fprintf(&y, "## 5. Yardstick: bytes per response against a plain copy\n\n")
	fmt.Fprintf(&y, "| GetTables with schemas, %d tables | value |\n|---|---|\n", len(tables))
	fmt.Fprintf(&y, "| Arrow bytes per response | %.0f (%.2f MB) |\n| lake serves (1 worker) | %.1f MB/s |\n| plain in-memory copy of the same bytes | %.0f MB/s |\n| lake / copy | %.3f |\n\n",
		perResp, perResp/1e6, served/1e6, copyRate/1e6, served/copyRate)
	r.target("bytes served per second / memcpy of the same bytes", "0.015", "≥ 0.10", served/copyRate >= 0.10, "%.3f", served/copyRate)
	return y.String(), nil
}

// arrowVersion is the arrow-go version this program (and the peer, a go.mod
// tool of the same module) is built with.
func arrowVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/apache/arrow-go/v18" {
				return "arrow-go " + m.Version
			}
		}
	}
	return "arrow-go, version unknown"
}
