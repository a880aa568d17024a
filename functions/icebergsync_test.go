package functions_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/wire"
)

// The Iceberg metadata bucket (LAKE_ICEBERG_METADATA) and the synced table's
// prefix in the data bucket, on the IAM-enforcing gateway.
const (
	icebergBucket = "lake-iceberg"
	eventsPrefix  = "acme/sales/events/"
)

// icebergS3 is the "s3" IO the tests register with iceberg-go, once per
// process (iceio.Register panics on a second registration of a scheme):
// an S3 client built from the properties iceberg-go passes, whose reads
// are logged by endpoint (s3.endpoint: each test's own gateway).
var icebergS3 struct {
	once sync.Once
	mu   sync.Mutex
	logs map[string]*s3ReadLog
}

// s3Read is one object the IO opened: the credentials its client signed
// with, the object and the outcome.
type s3Read struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Path                                       string
	Err                                        error
}

// s3ReadLog is the reads of one test's IOs. It is safe for concurrent use.
type s3ReadLog struct {
	mu    sync.Mutex
	reads []s3Read
}

func (l *s3ReadLog) add(r s3Read) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads = append(l.reads, r)
}

// Reads returns a copy of the reads so far, in order.
func (l *s3ReadLog) Reads() []s3Read {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reads)
}

// logS3Reads registers the "s3" IO (once) and returns the log of the reads
// iceberg-go makes through it for the gateway at endpoint, which tb's
// catalog must name as s3.endpoint.
func logS3Reads(tb testing.TB, endpoint string) *s3ReadLog {
	tb.Helper()
	icebergS3.once.Do(func() {
		if slices.Contains(iceio.GetRegisteredSchemes(), "s3") {
			return // someone else's IO: newS3IO below finds no log and says so
		}
		iceio.Register("s3", newS3IO)
	})
	icebergS3.mu.Lock()
	defer icebergS3.mu.Unlock()
	if icebergS3.logs == nil {
		icebergS3.logs = map[string]*s3ReadLog{}
	}
	l := &s3ReadLog{}
	icebergS3.logs[endpoint] = l
	tb.Cleanup(func() {
		icebergS3.mu.Lock()
		defer icebergS3.mu.Unlock()
		delete(icebergS3.logs, endpoint)
	})
	return l
}

// newS3IO is the iceio.SchemeFactory of "s3": a path-style client for
// s3.endpoint with the keys in s3.access-key-id, s3.secret-access-key and
// s3.session-token, in client.region (or s3.region, or us-east-1). Without
// keys in props it refuses, rather than fall back on any other credentials.
func newS3IO(_ context.Context, _ *url.URL, props map[string]string) (iceio.IO, error) {
	endpoint := props[iceio.S3EndpointURL]
	icebergS3.mu.Lock()
	log := icebergS3.logs[endpoint]
	icebergS3.mu.Unlock()
	if log == nil {
		return nil, fmt.Errorf("test s3 IO: no test logs reads for s3.endpoint %q", endpoint)
	}
	r := s3Read{AccessKeyID: props[iceio.S3AccessKeyID], SecretAccessKey: props[iceio.S3SecretAccessKey], SessionToken: props[iceio.S3SessionToken]}
	if r.AccessKeyID == "" || r.SecretAccessKey == "" {
		return nil, errors.New("test s3 IO: no s3.access-key-id and s3.secret-access-key in the table's properties")
	}
	region := cmp.Or(props[iceio.S3ClientRegion], props[iceio.S3Region], "us-east-1")
	client := s3.New(s3.Options{Region: region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(r.AccessKeyID, r.SecretAccessKey, r.SessionToken)})
	// Each read is logged with the keys the client signs with.
	return testenv.IcebergS3IO{Client: client, OnRead: func(name string, err error) {
		log.add(s3Read{AccessKeyID: r.AccessKeyID, SecretAccessKey: r.SecretAccessKey, SessionToken: r.SessionToken, Path: name, Err: err})
	}}, nil
}

// eventsParquet is a Parquet file of ids, each with the name "n<id>".
func eventsParquet(t *testing.T, ids ...int64) []byte {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("n" + strconv.FormatInt(id, 10))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(s, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// isAccessDenied reports whether err is versitygw's AccessDenied.
func isAccessDenied(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "AccessDenied"
}

// The Iceberg sync on AWS through the real programs, data and metadata on an
// IAM-enforcing gateway: the register Lambda's POST …/sync reads acme's
// Parquet files with the table's vended credentials and writes the Iceberg
// metadata under tables/<uuid>/metadata/ of LAKE_ICEBERG_METADATA's bucket;
// refresh carries it to discovery, whose Iceberg REST catalog vends with
// loadTable; iceberg-go then scans exactly the rows written, every object
// read with the vended keys (a versitygw IAM user, never root), which read
// the table's own metadata prefix and not another table's.
func TestIcebergSyncThroughThePrograms(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gw := testenv.StartIAMS3(t)
	st := testenv.StartSTS(t, gw)
	ctx := context.Background()
	gw.CreateBucket(t, dataBucket)
	gw.CreateBucket(t, icebergBucket)
	files := []struct {
		name string
		ids  []int64
	}{{"part-0.parquet", []int64{1, 2, 3}}, {"part-1.parquet", []int64{4, 5}}, {"part-2.parquet", []int64{6}}}
	var want []int64
	for _, f := range files {
		gw.PutObject(t, dataBucket, eventsPrefix+f.name, eventsParquet(t, f.ids...))
		want = append(want, f.ids...)
	}
	gw.PutObject(t, dataBucket, eventsPrefix+"notes.txt", []byte("not parquet"))

	vend := []string{"LAKE_VENDING_ROLE_ARN=" + st.RoleARN, "AWS_ENDPOINT_URL_STS=" + st.URL,
		"LAKE_VENDING_OWN_BUCKETS=" + s.bucket + "," + icebergBucket}
	// The register Lambda writes lake's metadata as lake (the gateway's
	// root: the Lambda's own credentials) and reads the table's files with
	// the credentials it vends; it does not touch the snapshot bucket.
	reg := testenv.StartLambda(t, testenv.Binary(t, "register"), append([]string{
		"LAKE_TABLE=" + s.table, "AWS_ENDPOINT_URL_DYNAMODB=" + s.ddb.Endpoint,
		"AWS_ENDPOINT_URL_S3=" + gw.Endpoint, "LAKE_S3_PATH_STYLE=true",
		"AWS_ACCESS_KEY_ID=" + gw.Access, "AWS_SECRET_ACCESS_KEY=" + gw.Secret,
		"LAKE_ICEBERG_METADATA=s3://" + icebergBucket + "/",
	}, vend...)...)

	api := "/v1/tenants/acme/namespaces/sales/tables"
	schema := map[string]any{"fields": []any{map[string]any{"name": "id", "type": "int64"}, map[string]any{"name": "name", "type": "utf8", "nullable": true}}}
	if resp := invokeAPI(t, reg, apiEvent("POST", api, map[string]any{"name": "events", "location": "s3://" + dataBucket + "/" + eventsPrefix, "schema": schema})); resp.StatusCode != http.StatusCreated {
		t.Fatalf("register acme/sales/events: got %d %s, want 201", resp.StatusCode, resp.Body)
	}
	if resp := invokeAPI(t, reg, apiEvent("POST", "/v1/admin/tenants/acme/allowed-prefixes", wire.AllowPrefixRequest{Prefix: "s3://" + dataBucket + "/acme/"})); resp.StatusCode != http.StatusOK {
		t.Fatalf("allow acme s3://%s/acme/: got %d %s, want 200", dataBucket, resp.StatusCode, resp.Body)
	}

	resp := invokeAPI(t, reg, apiEvent("POST", api+"/events/sync", nil))
	var res wire.SyncResult
	if err := json.Unmarshal([]byte(resp.Body), &res); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("sync acme/sales/events: got %d %s, want 200", resp.StatusCode, resp.Body)
	}
	if !res.Changed || res.Files != len(files) || res.Records != int64(len(want)) || len(res.Skipped) != 1 || !strings.HasSuffix(res.Skipped[0].Key, "notes.txt") {
		t.Fatalf("sync: got %+v, want changed, %d files, %d rows, notes.txt skipped", res, len(files), len(want))
	}
	uuid, _, ok := strings.Cut(strings.TrimPrefix(res.MetadataLocation, "s3://"+icebergBucket+"/tables/"), "/metadata/")
	metaPrefix := "tables/" + uuid + "/metadata/"
	if !ok || !strings.HasPrefix(res.MetadataLocation, "s3://"+icebergBucket+"/"+metaPrefix) || len(uuid) != 36 {
		t.Fatalf("sync's metadata location %q, want s3://%s/tables/<uuid>/metadata/…", res.MetadataLocation, icebergBucket)
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(gw.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(icebergBucket), Prefix: aws.String(metaPrefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list s3://%s/%s as root: %v", icebergBucket, metaPrefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	// The metadata file, its manifest list and at least one manifest.
	if mdKey := strings.TrimPrefix(res.MetadataLocation, "s3://"+icebergBucket+"/"); len(keys) < 3 || !slices.Contains(keys, mdKey) {
		t.Fatalf("objects under s3://%s/%s: %q, want the metadata file %s, a manifest list and a manifest", icebergBucket, metaPrefix, keys, mdKey)
	}
	if n := st.Count(); n < 1 {
		t.Fatalf("%d AssumeRole requests after the sync, want the sync to have read the files with vended credentials", n)
	}

	// A table registered where lake may read takes its snapshot before the
	// register Lambda answers (the Lambda may be frozen once it has): the
	// sync after it finds nothing new.
	gw.PutObject(t, dataBucket, "acme/sales/returns/part-0.parquet", eventsParquet(t, 7, 8))
	if resp := invokeAPI(t, reg, apiEvent("POST", api, map[string]any{"name": "returns", "location": "s3://" + dataBucket + "/acme/sales/returns/", "schema": schema})); resp.StatusCode != http.StatusCreated {
		t.Fatalf("register acme/sales/returns: got %d %s, want 201", resp.StatusCode, resp.Body)
	}
	resp = invokeAPI(t, reg, apiEvent("POST", api+"/returns/sync", nil))
	var again wire.SyncResult
	if err := json.Unmarshal([]byte(resp.Body), &again); resp.StatusCode != http.StatusOK || err != nil || again.Changed || again.Files != 1 || again.Records != 2 {
		t.Fatalf("sync after registering acme/sales/returns: %d %s; want unchanged, 1 file, 2 rows (synced by the register)", resp.StatusCode, resp.Body)
	}

	if pub, err := invokeRefresh(t, s.refresher(t)); err != nil || pub.Outcome != refresh.Published {
		t.Fatalf("refresh: got %+v, %v; want published", pub, err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	d := startDiscovery(t, "s3://"+s.bucket+"/"+key, append([]string{"LAKE_ICEBERG_LISTEN=" + addr,
		"AWS_ENDPOINT_URL_S3=" + s.s3.Endpoint, "LAKE_S3_PATH_STYLE=true",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=" + s.s3.Access, "AWS_SECRET_ACCESS_KEY=" + s.s3.Secret}, vend...)...)
	d.proc.WaitTCP(t, addr, 30*time.Second)
	waitFor(t, 30*time.Second, "discovery serving the snapshot", func() bool { return d.serving(t) == healthpb.HealthCheckResponse_SERVING })

	reads := logS3Reads(t, gw.Endpoint)
	// iceberg-go sends X-Iceberg-Access-Delegation: vended-credentials by
	// default; it is named here so the test does not rest on a default.
	cat, err := rest.NewCatalog(ctx, "lake", "http://"+addr, rest.WithOAuthToken(restToken(t, "acme")), rest.WithWarehouseLocation("acme"),
		rest.WithHeaders(map[string]string{"X-Iceberg-Access-Delegation": "vended-credentials"}),
		rest.WithAdditionalProps(iceberg.Properties{iceio.S3EndpointURL: gw.Endpoint}))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"sales", "events"})
	if err != nil {
		t.Fatalf("load sales.events: %v", err)
	}
	if got := tbl.MetadataLocation(); got != res.MetadataLocation {
		t.Fatalf("loaded metadata location %s, want the sync's %s", got, res.MetadataLocation)
	}
	if got := tbl.Metadata().TableUUID().String(); got != uuid {
		t.Errorf("loaded table-uuid %s, want %s (the metadata prefix's)", got, uuid)
	}
	if tbl.CurrentSnapshot() == nil {
		t.Fatal("loaded sales.events has no current snapshot")
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		for _, r := range reads.Reads() {
			t.Logf("read %s with %s: %v", r.Path, r.AccessKeyID, r.Err)
		}
		t.Fatalf("scan sales.events with the vended credentials: %v", err)
	}
	defer at.Release()
	type event struct {
		id   int64
		name string
	}
	var got []event
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		names := rec.Column(rec.Schema().FieldIndices("name")[0]).(*array.String)
		for i := range int(rec.NumRows()) {
			got = append(got, event{ids.Value(i), names.Value(i)})
		}
	}
	slices.SortFunc(got, func(a, b event) int { return cmp.Compare(a.id, b.id) })
	var wantRows []event
	for _, id := range want {
		wantRows = append(wantRows, event{id, "n" + strconv.FormatInt(id, 10)})
	}
	if !slices.Equal(got, wantRows) {
		t.Fatalf("scanned rows %v, want %v", got, wantRows)
	}

	// Every object went through the vended keys: a versitygw IAM user STS
	// minted, not the gateway's root, and both the metadata and the data.
	minted := map[string]bool{}
	for _, r := range st.Requests() {
		if r.AccessKeyID != "" {
			minted[r.AccessKeyID] = true
		}
	}
	all := reads.Reads()
	var vended s3Read
	var metaReads, dataReads int
	for _, r := range all {
		if r.AccessKeyID == gw.Access || !minted[r.AccessKeyID] || r.Err != nil {
			t.Fatalf("read %s with %s (%v): want the vended keys of an STS session, never root %s", r.Path, r.AccessKeyID, r.Err, gw.Access)
		}
		vended = r
		switch {
		case strings.HasPrefix(r.Path, "s3://"+icebergBucket+"/"+metaPrefix):
			metaReads++
		case strings.HasPrefix(r.Path, "s3://"+dataBucket+"/"+eventsPrefix):
			dataReads++
		}
	}
	if metaReads == 0 || dataReads != len(files) {
		t.Fatalf("reads through the IO: %d of the metadata prefix, %d data files; want some and %d: %+v", metaReads, dataReads, len(files), all)
	}
	t.Logf("%d objects read with vended key %s (%d metadata, %d data)", len(all), vended.AccessKeyID, metaReads, dataReads)

	// The same keys read no other table's metadata.
	other := "tables/00000000-0000-4000-8000-000000000000/metadata/x"
	gw.PutObject(t, icebergBucket, other, []byte("another table's metadata"))
	client := gw.ClientFor(vended.AccessKeyID, vended.SecretAccessKey, vended.SessionToken)
	if _, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(icebergBucket), Key: aws.String(other)}); !isAccessDenied(err) {
		t.Fatalf("GetObject s3://%s/%s with the vended keys: got %v, want AccessDenied", icebergBucket, other, err)
	}
	if _, err := gw.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(icebergBucket), Key: aws.String(other)}); err != nil {
		t.Fatalf("GetObject s3://%s/%s as root: %v (the denial above must be the policy's)", icebergBucket, other, err)
	}
}
