package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// ---- 1. discovery against the peer ----

func benchPeer(c config, r *report, procs *procSet) error {
	const peerBin = "bin/sqlite_flightsql_server"
	if _, err := os.Stat(peerBin); err != nil {
		return fmt.Errorf("%s missing: run `make bench-tools`, or skip this section with -peer=false", peerBin)
	}
	peerPort := freePort()
	peer, err := procs.start(nil, peerBin, "-host", "127.0.0.1", "-port", strconv.Itoa(peerPort))
	if err != nil {
		return err
	}
	defer peer.Stop()
	peerAddr := "127.0.0.1:" + strconv.Itoa(peerPort)
	if err := waitTCP(peer, peerAddr, 30*time.Second); err != nil {
		return err
	}
	pc, err := flightsql.NewClient(peerAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		return err
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
			return fmt.Errorf("peer: create table: %w", err)
		}
	}
	// The peer's own answer gives the exact schemas lake registers.
	info, err := pc.GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		return err
	}
	rdr, err := pc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return err
	}
	var tables []namedSchema
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			tables = append(tables, namedSchema{rec.Column(2).(*array.String).Value(i), bytes.Clone(rec.Column(4).(*array.Binary).Value(i))})
		}
	}
	err = rdr.Err()
	rdr.Release()
	if err != nil || len(tables) < c.peerTables {
		return fmt.Errorf("peer GetTables: %d tables, %v", len(tables), err)
	}

	lake, err := startLocalLake(procs, "bench")
	if err != nil {
		return err
	}
	defer lake.stop()
	if err := lake.register(tables); err != nil {
		return err
	}
	lc, lctx, err := lake.client()
	if err != nil {
		return err
	}
	defer lc.Close()
	if _, rows, err := getTables(lctx, lc, &flightsql.GetTablesOpts{}); err != nil || rows != len(tables) {
		return fmt.Errorf("lake lists %d tables (%v), want %d", rows, err, len(tables))
	}

	kinds := getTablesKinds(tables[len(tables)/2].name)
	r.printf("## 1. Discovery against arrow-go's SQLite Flight SQL server (%s)\n\n", arrowVersion())
	r.printf("%d tables × 20 columns created in the peer through ExecuteUpdate; the schemas it reports are registered unchanged in lake's local mode, so both answer with the same schema bytes. Same client, alternated A/B, %d rounds of %v per side.\n\n", len(tables), c.rounds, c.roundTime)
	r.printf("| request | workers | peer req/s | peer p50 ms | peer p99 ms | lake req/s | lake p50 ms | lake p99 ms | lake/peer |\n|---|---|---|---|---|---|---|---|---|\n")
	ratios := map[string][]float64{}
	for _, k := range kinds {
		for _, workers := range []int{1, 2} {
			var ps, ls sample
			for range c.rounds {
				if err := runFor(&ps, workers, c.roundTime, func() (int64, error) { n, _, err := getTables(ctx, pc, k.opts()); return n, err }); err != nil {
					return fmt.Errorf("peer %s: %w", k.name, err)
				}
				if err := runFor(&ls, workers, c.roundTime, func() (int64, error) { n, _, err := getTables(lctx, lc, k.opts()); return n, err }); err != nil {
					return fmt.Errorf("lake %s: %w", k.name, err)
				}
			}
			r.printf("| %s | %d | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f | **%.1f×** |\n", k.name, workers,
				ps.reqPerSec(), ps.pct(50), ps.pct(99), ls.reqPerSec(), ls.pct(50), ls.pct(99), ls.reqPerSec()/ps.reqPerSec())
			ratios[k.name] = append(ratios[k.name], ls.reqPerSec()/ps.reqPerSec())
		}
	}
	r.printf("\n")
	ratioRange := func(rs []float64) (string, float64) {
		return fmt.Sprintf("%.1f–%.1f×", slices.Min(rs), slices.Max(rs)), slices.Min(rs)
	}
	txt, lo := ratioRange(ratios[kinds[0].name])
	r.target(fmt.Sprintf("GetTables with schemas, %d tables, vs the SQLite peer", len(tables)), "33–39×", "≥ 60×", lo >= 60, "%s", txt)
	txt, lo = ratioRange(ratios[kinds[1].name])
	r.target(fmt.Sprintf("GetTables names only, %d tables, vs the peer", len(tables)), "3.5–5.6×", "≥ 8×", lo >= 8, "%s", txt)
	return nil
}

// getTablesKind is one GetTables request the comparisons time.
type getTablesKind struct {
	name string
	opts func() *flightsql.GetTablesOpts
}

// getTablesKinds are the three GetTables requests sections 1 and 5 time:
// the whole tenant with schemas, its names only, and the table named one
// (an exact name as the pattern) with its schema.
func getTablesKinds(one string) []getTablesKind {
	return []getTablesKind{
		{"GetTables with schemas (all)", func() *flightsql.GetTablesOpts { return &flightsql.GetTablesOpts{IncludeSchema: true} }},
		{"GetTables without schemas", func() *flightsql.GetTablesOpts { return &flightsql.GetTablesOpts{} }},
		{"one exact table with schema", func() *flightsql.GetTablesOpts {
			return &flightsql.GetTablesOpts{TableNameFilterPattern: &one, IncludeSchema: true}
		}},
	}
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
