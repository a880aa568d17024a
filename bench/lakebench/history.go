package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

// benchHistory measures what the version records cost a registration
// (issue 26's target: register p50 with history on ≤ 1.5× without), in
// local mode's store: catalog.Register on RocksDB, one writer, with
// HistoryVersions at its default and at -1 (none kept) side by side,
// alternated over rounds; the p50 of each round, then the median of the
// rounds' ratios.
func benchHistory(c config, r *report) error {
	rounds, dur := 6, 2*time.Second
	if c.quick {
		rounds, dur = 2, 300*time.Millisecond
	}
	spec := catalog.TableSpec{Location: "s3://lake/bench/", Schema: catalogtest.WideSchema(1, 20)}
	var seq atomic.Int64
	run := func(history int) (float64, error) {
		dir, err := os.MkdirTemp("", "lakebench-history-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		st, err := rocksdb.Open(dir, rocksdb.Options{})
		if err != nil {
			return 0, err
		}
		defer st.Close()
		cat := catalog.New(st, catalog.Options{HistoryVersions: history, Quota: catalog.Quota{MaxTables: -1, MaxBytes: -1}})
		var s sample
		err = runFor(&s, 1, dur, func() (int64, error) {
			ref := catalog.TableRef{Tenant: "bench", Namespace: "main", Name: fmt.Sprintf("t%08d", seq.Add(1))}
			_, _, err := cat.Register(context.Background(), ref, spec)
			return 0, err
		})
		return s.pct(50), err
	}
	r.printf("## 10. Register latency with history on (issue 26)\n\n")
	r.printf("catalog.Register of new 20-column tables on RocksDB (local mode's store), one writer, %v a run: history on (the newest %d versions kept, a version record written after each registration) and off (HistoryVersions -1), alternated over %d rounds.\n\n",
		dur, catalog.DefaultHistoryVersions, rounds)
	r.printf("| round | history on p50 ms | history off p50 ms | ratio |\n|---|---|---|---|\n")
	var ratios []float64
	for i := range rounds {
		var on, off float64
		var err error
		if i%2 == 0 {
			if on, err = run(0); err == nil {
				off, err = run(-1)
			}
		} else {
			if off, err = run(-1); err == nil {
				on, err = run(0)
			}
		}
		if err != nil {
			return err
		}
		ratios = append(ratios, on/max(off, 1e-6))
		r.printf("| %d | %.3f | %.3f | %.2f |\n", i+1, on, off, on/max(off, 1e-6))
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	r.printf("\nMedian ratio over the rounds: %.2f×.\n\n", med)
	r.target("register latency with history on (local mode's store, p50) ÷ without", "measured today", "≤ 1.5×", med <= 1.5, "%.2f× (median of %d alternated rounds)", med, rounds)
	return nil
}
