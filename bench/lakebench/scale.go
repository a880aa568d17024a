package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// ---- 2. scale ----

func benchScale(c config, r *report, procs *procSet) error {
	r.printf("## 2. Catalog scale: a 100-table tenant inside catalogs of growing size\n\n")
	r.printf("Filler tables spread over 10,000 tenants, 20 columns each (1,000 distinct schemas). Discovery is the real binary loading the blob file.\n\n")
	r.printf("Cold: the first GetTables with schemas of each of %d filler tenants never asked before (about tables/10,000 tables each). Warm: the 100-table tenant, asked repeatedly. RSS after load is read before any request; after requests, at the end.\n\n", coldProbes(c))
	r.printf("| tables | snapshot build s | blob MB | blob encode s | discovery load s | RSS after load MB | cold first GetTables p50 ms | warm GetTables p50 ms | p99 ms | RSS after requests MB |\n|---|---|---|---|---|---|---|---|---|---|\n")
	now := time.Now()
	pool := make([]catalog.Registration, 1000)
	for i := range pool {
		reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)}, now)
		if err != nil {
			return err
		}
		pool[i] = reg
	}
	secret := []byte("bench-secret-0123456789abcdefghijklmnop")
	token, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "probe", TTL: time.Hour, Now: now})
	for _, total := range c.scaleSizes {
		res := make([]scan.Registered, 0, total)
		for i := range 100 {
			res = append(res, scan.Registered{Ref: catalog.TableRef{Tenant: "probe", Namespace: "ns" + strconv.Itoa(i%4), Name: fmt.Sprintf("t%03d", i)}, Registration: pool[i]})
		}
		for i := range total - 100 {
			res = append(res, scan.Registered{
				Ref:          catalog.TableRef{Tenant: fmt.Sprintf("tenant%05d", i%10000), Namespace: "ns" + strconv.Itoa(i%7), Name: "t" + strconv.Itoa(i)},
				Registration: pool[i%len(pool)],
			})
		}
		// The writer takes the rows as they are: building rows and
		// encoding them is one step now (the build column is 0).
		var build time.Duration
		t0 := time.Now()
		blob, err := encodeRegistrations(res)
		if err != nil {
			return err
		}
		encode := time.Since(t0)
		res = nil
		dir, err := os.MkdirTemp("", "lakebench-scale-")
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "catalog.lakesnap")
		if err := os.WriteFile(path, blob, 0o644); err != nil {
			return err
		}
		blobMB := float64(len(blob)) / 1e6
		blob = nil
		runtime.GC()
		flightAddr, httpAddr := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
		d, err := procs.start([]string{"LAKE_JWT_HS256_SECRET=" + string(secret)}, "bin/discovery", "-listen", flightAddr, "-http-listen", "-", "-admin-listen", httpAddr, "-snapshot", path, "-poll-interval", "1h")
		if err != nil {
			return err
		}
		if err := waitTCP(d, flightAddr, 30*time.Second); err != nil {
			return err
		}
		loadSec, err := waitLoaded(httpAddr, 5*time.Minute)
		if err != nil {
			return err
		}
		loadRSS := rssMB(d.Pid())
		client, err := flightsql.NewClient(flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		var cold sample
		for i := range coldProbes(c) {
			tenant := fmt.Sprintf("tenant%05d", (i*7919)%min(10000, total-100))
			tok, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: now})
			cctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
			t0 := time.Now()
			_, rows, err := getTables(cctx, client, &flightsql.GetTablesOpts{IncludeSchema: true})
			cold.lat = append(cold.lat, time.Since(t0))
			if err == nil && rows == 0 {
				err = fmt.Errorf("cold tenant %s: no tables", tenant)
			}
			if err != nil {
				client.Close()
				d.Stop()
				return err
			}
		}
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
		var s sample
		err = runFor(&s, 1, c.roundTime*2, func() (int64, error) {
			n, rows, err := getTables(ctx, client, &flightsql.GetTablesOpts{IncludeSchema: true})
			if err == nil && rows != 100 {
				err = fmt.Errorf("%d rows, want 100", rows)
			}
			return n, err
		})
		client.Close()
		rss := rssMB(d.Pid())
		d.Stop()
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
		r.printf("| %d | %.2f | %.1f | %.2f | %.2f | %.0f | %.2f | %.2f | %.2f | %.0f |\n", total, build.Seconds(), blobMB, encode.Seconds(), loadSec, loadRSS, cold.pct(50), s.pct(50), s.pct(99), rss)
		r.points = append(r.points, scalePoint{tables: total, coldP50: cold.pct(50), warmP50: s.pct(50), loadRSS: loadRSS, loadSec: loadSec})
	}
	if last := r.points[len(r.points)-1]; last.tables == 1_000_000 {
		r.target("discovery RSS after load, 1M tables (10k tenants, 20 columns)", "4,254 MB", "≤ 300 MB", last.loadRSS <= 300, "%.0f MB", last.loadRSS)
		r.target("discovery load time, 1M tables", "14.2 s", "≤ 1.5 s", last.loadSec <= 1.5, "%.2f s", last.loadSec)
		r.target("first GetTables (with schemas) on a cold 100-table tenant, p50", "—", "≤ 5 ms", last.coldP50 <= 5, "%.2f ms", last.coldP50)
	}
	r.printf("\n")
	return nil
}

// coldProbes is how many never-asked tenants the scale section times.
func coldProbes(c config) int {
	if c.quick {
		return 20
	}
	return 200
}

// scalePoint is one catalog size's figures, for the plot.
type scalePoint struct {
	tables                    int
	coldP50, warmP50, loadRSS float64
	loadSec                   float64
}

// waitLoaded polls discovery's /healthz and returns the load time it reports.
func waitLoaded(httpAddr string, limit time.Duration) (float64, error) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			continue
		}
		resp, err = http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "lake_discovery_snapshot_load_seconds ") {
				return strconv.ParseFloat(strings.Fields(line)[1], 64)
			}
		}
		return 0, errors.New("no load time in /metrics")
	}
	return 0, errors.New("discovery did not load the snapshot")
}

// ---- 2b. refresh peak heap, in process ----

// benchRefreshHeap runs one refresh in process over a memstore of
// c.heapSize registrations (10,000 tenants, 20 columns, 1,000 distinct
// schemas) and compares its peak heap with the bytes it scans.
func benchRefreshHeap(c config, r *report) error {
	ctx := context.Background()
	store, tenants, scanned, err := fillStore(ctx, c.heapSize)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "lakebench-heap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := &refresh.Publisher{Store: store, Blobs: blobstore.NewFile(filepath.Join(dir, "catalog.lakesnap"))}
	var res refresh.Result
	t0 := time.Now()
	peak := testenv.PeakHeap(func() { res, err = p.Run(ctx) })
	el := time.Since(t0)
	if err != nil {
		return err
	}
	if res.Counts.Tables != c.heapSize {
		return fmt.Errorf("refresh saw %d tables, want %d", res.Counts.Tables, c.heapSize)
	}
	ratio := float64(peak) / float64(scanned)
	r.printf("## 2b. Refresh peak heap, in process over a memstore\n\n")
	r.printf("| registrations | tenants | bytes scanned MB | refresh s | peak heap MB | peak heap / bytes scanned | blob MB |\n|---|---|---|---|---|---|---|\n")
	r.printf("| %d | %d | %.0f | %.2f | %.0f | %.2f | %.2f |\n\n", c.heapSize, tenants, float64(scanned)/1e6, el.Seconds(), float64(peak)/1e6, ratio, float64(res.BlobBytes)/1e6)
	if c.heapSize == 1_000_000 {
		r.target("refresh peak heap / bytes scanned, 1M registrations (in process, memstore)", "—", "≤ 2", ratio <= 2, "%.2f", ratio)
	}
	return nil
}

// fillStore makes a memstore of n registrations of 20 columns over
// min(10,000, n/100) tenants, as a full scan meets them: 1,000
// registrations made through the catalog, the rest copies of their stored
// bytes (a registration's value holds no name). It returns the store, the
// tenant count and the bytes a scan reads.
func fillStore(ctx context.Context, n int) (*memstore.Store, int, int64, error) {
	store := memstore.New(memstore.Options{})
	cat := catalog.New(store, catalog.Options{Quota: catalog.Quota{MaxTables: -1, MaxBytes: -1}})
	pool := make([][]byte, 1000)
	for i := range pool {
		ref := catalog.TableRef{Tenant: "pool", Namespace: "ns", Name: fmt.Sprintf("t%04d", i)}
		if _, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)}); err != nil {
			return nil, 0, 0, err
		}
		key, _ := ref.Key()
		v, err := store.Get(ctx, key)
		if err != nil {
			return nil, 0, 0, err
		}
		pool[i] = v
		if err := store.Delete(ctx, key); err != nil {
			return nil, 0, 0, err
		}
	}
	tenants := min(10_000, max(1, n/100))
	var scanned int64
	for i := range n {
		ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%05d", i%tenants), Namespace: "ns" + strconv.Itoa(i%7), Name: "t" + strconv.Itoa(i)}
		key, _ := ref.Key()
		v := pool[i%len(pool)]
		if err := store.Put(ctx, key, v); err != nil {
			return nil, 0, 0, err
		}
		scanned += int64(len(v))
	}
	return store, tenants, scanned, nil
}
