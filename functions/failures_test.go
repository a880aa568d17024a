package functions_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

func (s *stack) rawBlob(t *testing.T) []byte {
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
	return b
}

func (s *stack) putBlob(t *testing.T, b []byte) {
	t.Helper()
	if _, err := s.s3.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
}

// The blob's failure cases, through the real refresh bootstrap: a blob
// whose header is intact but whose body was cut short is republished (not
// answered unchanged forever); a deleted blob restarts above every
// generation published before (discovery refuses older ones).
func TestRefreshRepairsTruncatedAndMissingBlobs(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg, fn := s.register(t), s.refresher(t)
	for i, name := range []string{"a", "b", "c"} {
		registerTable(t, reg, "acme", name, ipcB64(t, i))
		if res, err := invokeRefresh(t, fn); err != nil || res.Generation != uint64(i+1) {
			t.Fatalf("refresh %d = %+v, %v", i, res, err)
		}
	}
	full := s.rawBlob(t)
	s.putBlob(t, full[:len(full)-100])
	if res, err := invokeRefresh(t, fn); err != nil || res.Outcome != refresh.Published || res.Generation != 4 {
		t.Fatalf("refresh over a truncated blob = %+v, %v; want published at generation 4", res, err)
	}
	if snap, _ := s.blob(t); snap.Counts.Tables != 3 {
		t.Fatalf("republished blob has %d tables", snap.Counts.Tables)
	}
	if _, err := s.s3.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	if res, err := invokeRefresh(t, fn); err != nil || res.Outcome != refresh.Published || res.Generation != 5 {
		t.Fatalf("refresh over a deleted blob = %+v, %v; want published at generation 5", res, err)
	}
}

// A conditional write refused because an older blob was put in place
// meanwhile is a function error, not a silent "superseded".
func TestRefreshRefusedByAnOlderBlobFails(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg := s.register(t)
	registerTable(t, reg, "acme", "a", ipcB64(t, 1))
	if _, err := invokeRefresh(t, s.refresher(t)); err != nil {
		t.Fatal(err)
	}
	// Another generation-1 blob (of an empty catalog): older than the run's
	// generation 2, and other bytes, so another ETag.
	empty, err := scan.Build(context.Background(), memstore.New(memstore.Options{}), scan.BuildOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	older, err := empty.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	registerTable(t, reg, "acme", "b", ipcB64(t, 2))
	// The older blob is written again between the run's read and its
	// write: the write's If-Match no longer holds.
	var once sync.Once
	proxy := testenv.StartFaultProxy(t, s.s3.Endpoint, func(op string, n int) *testenv.Fault {
		if op == "PUT" {
			once.Do(func() { s.putBlob(t, older) })
		}
		return nil
	})
	fn := testenv.StartLambda(t, testenv.Binary(t, "refresh"), s.env("", proxy.URL)...)
	if res, err := invokeRefresh(t, fn); err == nil || !strings.Contains(err.Error(), "not newer than generation 2") {
		t.Fatalf("refresh refused by an older blob = %+v, %v; want a function error saying so", res, err)
	}
}

// A stream batch applied incrementally and a scheduled full refresh racing
// to publish (a proxy holds both writes until both arrived): one wins, the
// other applies its batch again or stands superseded, and the blob ends
// with every change at a generation that only grew.
func TestIncrementalAndFullRefreshRace(t *testing.T) {
	t.Parallel()
	s, incremental, full := racingRefreshers(t)
	var wg sync.WaitGroup
	var incRes, fullRes refresh.Result
	var incErr, fullErr error
	wg.Go(func() {
		incRes, incErr = invokeWith(t, incremental, streamBatch([2]string{"INSERT", "tbl/acme/sales/second"}, [2]string{"MODIFY", catalog.ChangesKey}))
	})
	wg.Go(func() { fullRes, fullErr = invokeRefresh(t, full) })
	wg.Wait()
	if incErr != nil || fullErr != nil {
		t.Fatalf("racing refreshes: incremental %v, full %v", incErr, fullErr)
	}
	snap, _ := s.blob(t)
	if snap.Counts.Tables != 2 || snap.Generation < 2 || snap.Generation < max(incRes.Generation, fullRes.Generation) {
		t.Fatalf("after the race: blob generation %d with %d tables (incremental %+v, full %+v); want both tables at the highest generation",
			snap.Generation, snap.Counts.Tables, incRes, fullRes)
	}
	if incRes.Outcome != refresh.Published && fullRes.Outcome != refresh.Published {
		t.Fatalf("neither racer published: %+v, %+v", incRes, fullRes)
	}
}
