package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// entryOf is tenant's entry in the manifest published in s's bucket.
func (s *stack) entryOf(t *testing.T, tenant string) snapshot.Entry {
	t.Helper()
	out, err := s.s3.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	m, err := snapshot.Open(b, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.Entry(tenant)
	if !ok {
		t.Fatalf("the manifest names no segment of %s", tenant)
	}
	return e
}

// One tenant's segment object damaged in the S3-protocol server is that
// tenant's problem alone, through the real programs (the register and
// refresh bootstraps under the Lambda emulator, versitygw, dynalite, the
// discovery binary): a discovery process started after the damage serves
// every other tenant and answers that one UNAVAILABLE naming its state,
// says so in /status, /metrics and /healthz, and the next scheduled refresh
// rewrites the segment, which discovery then loads (issue 38, row 6: the
// new process served no tenant at all).
func TestDamagedSegmentIsOneTenantsProblem(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg := s.register(t)
	tenants := map[string][]string{"acme": {"orders", "returns"}, "globex": {"ledger"}, "initech": {"tickets", "users", "vendors"}}
	seed := 0
	for tenant, tables := range tenants {
		for _, name := range tables {
			seed++
			registerTable(t, reg, tenant, name, ipcB64(t, seed))
		}
	}
	fn := s.refresher(t)
	if res, err := invokeRefresh(t, fn); err != nil || res.Outcome != refresh.Published || res.SegmentsWritten != 3 {
		t.Fatalf("first refresh = %+v, %v; want 3 segments written", res, err)
	}

	// globex's segment object no longer matches its address.
	ctx := context.Background()
	globex := s.entryOf(t, "globex")
	bad := bytes.Clone(s.segment(t, globex))
	bad[len(bad)/2] ^= 0x10
	if _, err := s.s3.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(segmentKey(globex)), Body: bytes.NewReader(bad)}); err != nil {
		t.Fatal(err)
	}

	d := startDiscovery(t, "s3://"+s.bucket+"/"+key, "AWS_ENDPOINT_URL_S3="+s.s3.Endpoint, "LAKE_S3_PATH_STYLE=true", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID="+s.s3.Access, "AWS_SECRET_ACCESS_KEY="+s.s3.Secret, "LAKE_SEGMENT_RETRY_MAX=1s")
	served := func(tenant string) bool {
		names, err := d.tableNames(t, tenant, true)
		slices.Sort(names)
		return err == nil && slices.Equal(names, tenants[tenant])
	}
	waitFor(t, 30*time.Second, "acme and initech served by the new process", func() bool { return served("acme") && served("initech") })
	_, err := d.tableNames(t, "globex", false)
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), `"globex"`) || !strings.Contains(st.Message(), "damaged") {
		t.Fatalf("globex: %v; want UNAVAILABLE naming globex and its damaged segment", err)
	}
	var st struct {
		Degraded []struct{ Tenant, State, Serving string } `json:"degraded_tenants"`
	}
	if err := json.Unmarshal([]byte(httpBody(t, "http://"+d.admin+"/status")), &st); err != nil || len(st.Degraded) != 1 ||
		st.Degraded[0].Tenant != "globex" || st.Degraded[0].State != "damaged" || st.Degraded[0].Serving != "unavailable" {
		t.Fatalf("/status degraded tenants: %+v (%v); want globex, damaged, unavailable", st.Degraded, err)
	}
	if m := httpBody(t, "http://"+d.admin+"/metrics"); !strings.Contains(m, "lake_discovery_degraded_tenants 1\n") ||
		!strings.Contains(m, `lake_discovery_segment_failures_total{reason="damaged"}`) {
		t.Fatal("/metrics: want lake_discovery_degraded_tenants 1 and a damaged segment failure counted")
	}
	if code, body := httpStatus(t, "http://"+d.http+"/healthz"), httpBody(t, "http://"+d.http+"/healthz"); code != http.StatusOK || !strings.Contains(body, "1 of 3 tenants degraded") {
		t.Fatalf("/healthz: %d %q; want 200, 1 of 3 tenants degraded", code, body)
	}

	// The next scheduled refresh finds the segment damaged and rewrites it;
	// discovery loads it at its next attempt.
	res, err := invokeRefresh(t, fn)
	if err != nil || res.SegmentsVerified != 3 || res.SegmentsRepaired != 1 || fmt.Sprint(res.Repaired) != "[globex]" {
		t.Fatalf("the scheduled refresh after the damage = %+v, %v; want globex's segment repaired", res, err)
	}
	waitFor(t, 30*time.Second, "globex served again", func() bool { return served("globex") })
	if err := json.Unmarshal([]byte(httpBody(t, "http://"+d.admin+"/status")), &st); err != nil || len(st.Degraded) != 0 {
		t.Fatalf("/status after the repair: %+v (%v); want no degraded tenant", st.Degraded, err)
	}
	for tenant := range tenants {
		if !served(tenant) {
			t.Fatalf("%s not served after the repair", tenant)
		}
	}
}
