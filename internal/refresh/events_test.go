package refresh

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// The events refresh puts on the bus: ten entries a call, each with lake's
// source and detail-type and a detail naming the tenant (what a rule
// filters on), the table, the change, who made it and the generation.
func TestEventEntries(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	var changes []scan.Change
	for i := range 23 {
		changes = append(changes, scan.Change{Ref: catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: fmt.Sprintf("t%d", i)},
			Op: catalog.OpUpdate, Version: int64(i + 1), CreationID: "0123456789abcdef", By: "arn:aws:iam::1:role/acme-producer", At: at})
	}
	batches, err := eventEntries("lake-changes", 42, changes)
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != 3 || len(batches[0]) != 10 || len(batches[2]) != 3 {
		t.Fatalf("batches of %d, %d, …; want 10, 10, 3", len(batches[0]), len(batches[1]))
	}
	e := batches[2][2]
	if aws.ToString(e.EventBusName) != "lake-changes" || aws.ToString(e.Source) != EventSource || aws.ToString(e.DetailType) != EventDetailType || !e.Time.Equal(at) {
		t.Fatalf("entry %+v", e)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"tenant": "acme", "namespace": "sales", "table": "t22", "op": "update", "version": 23.0,
		"creation_id": "0123456789abcdef", "by": "arn:aws:iam::1:role/acme-producer", "at": "2026-12-05T07:00:00Z", "generation": 42.0}
	if fmt.Sprint(d) != fmt.Sprint(want) {
		t.Fatalf("detail %v, want %v", d, want)
	}
}
