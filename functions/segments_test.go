package functions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
)

// The write and read sides move what changed, through the real programs
// (the register bootstrap, the refresh bootstrap under the Lambda emulator
// on a stream batch, versitygw, the discovery binary), every S3 request
// counted by a proxy:
//   - a batch touching one tenant of five reads the manifest and that
//     tenant's segment and writes that tenant's new segment and the
//     manifest, and tags the segment it replaced;
//   - discovery then fetches the manifest and that one segment;
//   - a new manifest whose segment of one tenant discovery cannot fetch is
//     taken for every other tenant, and that tenant keeps its last good
//     state until the segment is there.
func TestStreamBatchMovesOnlyTheChangedTenant(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg := s.register(t)
	tenants := []string{"acme", "globex", "initech", "umbrella", "wayne"}
	for i, tenant := range tenants {
		for j := range 3 {
			registerTable(t, reg, tenant, fmt.Sprintf("t%d", j), ipcB64(t, i*3+j))
		}
	}
	if res, err := invokeRefresh(t, s.refresher(t)); err != nil || res.Outcome != refresh.Published || res.SegmentsWritten != 5 {
		t.Fatalf("first refresh = %+v, %v; want 5 segments written", res, err)
	}

	dproxy := startCountingProxy(t, s.s3.Endpoint)
	d := startDiscovery(t, "s3://"+s.bucket+"/"+key, "AWS_ENDPOINT_URL_S3="+dproxy.url, "LAKE_S3_PATH_STYLE=true", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID="+s.s3.Access, "AWS_SECRET_ACCESS_KEY="+s.s3.Secret, "LAKE_SEGMENT_RETRY_MAX=1s")
	waitFor(t, 20*time.Second, "the first snapshot", func() bool {
		names, _ := d.tableNames(t, "globex", false)
		return len(names) == 3
	})
	if n := countSegmentGets(dproxy.requests()); n != 5 {
		t.Fatalf("the first load fetched %d segments, want 5", n)
	}

	// One tenant changes; its stream batch goes through a counting proxy.
	registerTable(t, reg, "globex", "t3", ipcB64(t, 99))
	rproxy := startCountingProxy(t, s.s3.Endpoint)
	fn := testenv.StartLambda(t, testenv.Binary(t, "refresh"), s.env("", rproxy.url)...)
	before := len(dproxy.requests())
	res, err := invokeWith(t, fn, streamBatch([2]string{"INSERT", "tbl/globex/sales/t3"}))
	if err != nil || !res.Incremental || res.Outcome != refresh.Published {
		t.Fatalf("stream batch = %+v, %v", res, err)
	}
	var segPuts, manifestPuts, tags, segGets, manifestGets, other int
	var written int64
	manifestPath := "/" + s.bucket + "/" + key
	for _, r := range rproxy.requests() {
		switch {
		case r.method == "PUT" && strings.Contains(r.query, "tagging"):
			tags++
		case r.method == "PUT" && strings.Contains(r.path, blobstore.SegmentsSuffix):
			segPuts++
			written += r.sent
		case r.method == "PUT" && r.path == manifestPath:
			manifestPuts++
			written += r.sent
		case r.method == "GET" && strings.Contains(r.path, blobstore.SegmentsSuffix):
			segGets++
		case r.method == "GET" && r.path == manifestPath:
			manifestGets++
		default:
			other++
			t.Errorf("refresh's request %s %s?%s", r.method, r.path, r.query)
		}
	}
	if segPuts != 1 || manifestPuts != 1 || tags != 1 || segGets != 1 || manifestGets != 1 || other != 0 {
		t.Fatalf("the batch: %d segment PUTs, %d manifest PUTs, %d tag PUTs, %d segment GETs, %d manifest GETs; want 1 each",
			segPuts, manifestPuts, tags, segGets, manifestGets)
	}
	if written != int64(res.BlobBytes+res.BytesWritten) {
		t.Fatalf("the proxy saw %d bytes written, the result says %d + %d", written, res.BlobBytes, res.BytesWritten)
	}

	waitFor(t, 20*time.Second, "the change at discovery", func() bool {
		names, _ := d.tableNames(t, "globex", false)
		return len(names) == 4
	})
	waitFor(t, 20*time.Second, "a poll after the load", func() bool {
		rs := dproxy.requests()
		return rs[len(rs)-1].status == 304
	})
	fetchedManifest, fetchedSegs := 0, 0
	for _, r := range dproxy.requests()[before:] {
		switch {
		case r.method == "GET" && r.path == manifestPath && r.status == 200:
			fetchedManifest++
		case r.method == "GET" && strings.Contains(r.path, blobstore.SegmentsSuffix):
			fetchedSegs++
		case r.method == "GET" && r.path == manifestPath && r.status == 304 && r.bytes == 0:
		default:
			t.Fatalf("discovery's request %s %s: %d, %d bytes", r.method, r.path, r.status, r.bytes)
		}
	}
	if fetchedManifest != 1 || fetchedSegs != 1 {
		t.Fatalf("discovery fetched the manifest %d times and %d segments after the change, want 1 and 1", fetchedManifest, fetchedSegs)
	}

	// The next change's segment cannot be fetched by discovery: acme keeps
	// its last good state, and /status says why.
	dproxy.setMissing(func(path string) bool { return strings.Contains(path, blobstore.SegmentsSuffix) })
	registerTable(t, reg, "acme", "t9", ipcB64(t, 98))
	if res, err := invokeWith(t, fn, streamBatch([2]string{"INSERT", "tbl/acme/sales/t9"})); err != nil || res.Outcome != refresh.Published {
		t.Fatalf("second batch = %+v, %v", res, err)
	}
	waitFor(t, 20*time.Second, "acme degraded", func() bool {
		var st discovery.Status
		_ = json.Unmarshal([]byte(httpBody(t, "http://"+d.admin+"/status")), &st)
		return len(st.DegradedTenants) == 1 && st.DegradedTenants[0].Tenant == "acme" && st.DegradedTenants[0].State == discovery.SegmentMissing &&
			st.DegradedTenants[0].Serving == discovery.ServingLastGood
	})
	for _, tenant := range tenants {
		names, err := d.tableNames(t, tenant, false)
		want := 3
		if tenant == "globex" {
			want = 4
		}
		if err != nil || len(names) != want {
			t.Fatalf("%s while a segment is missing: %q, %v; want the last good snapshot's %d tables", tenant, names, err, want)
		}
	}
	dproxy.setMissing(nil)
	waitFor(t, 20*time.Second, "the load once the segment is there", func() bool {
		names, _ := d.tableNames(t, "acme", false)
		return len(names) == 4
	})
}

func countSegmentGets(rs []proxiedGet) int {
	n := 0
	for _, r := range rs {
		if r.method == "GET" && strings.Contains(r.path, blobstore.SegmentsSuffix) {
			n++
		}
	}
	return n
}
