package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/wire"
)

const changesActionDescription = `The caller's tenant's change feed from the snapshot: body {"since" (a cursor from a previous page; empty: from the first),"limit" (1–500)}; ` +
	`one Result, JSON {"tenant","changes":[{"cursor","at","op","namespace","table","version","by","creation_id"}],"next"}`

// parseChanges decodes and checks a changes body. Any failure is
// INVALID_ARGUMENT.
func parseChanges(body []byte) (wire.ChangesRequest, time.Time, string, error) {
	var req wire.ChangesRequest
	bad := func(format string, args ...any) (wire.ChangesRequest, time.Time, string, error) {
		return req, time.Time{}, "", status.Errorf(codes.InvalidArgument, "changes: "+format, args...)
	}
	if len(body) > wire.MaxChangesBody {
		return bad("body is %d bytes, at most %d", len(body), wire.MaxChangesBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return bad("body is not a changes request: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("body has data after the request")
	}
	if req.Limit < 1 || req.Limit > wire.MaxChangesLimit {
		return bad("limit must be 1 to %d", wire.MaxChangesLimit)
	}
	if req.Since == "" {
		return req, time.Time{}, "", nil
	}
	at, key, err := wire.DecodeCursor(req.Since)
	if err != nil {
		return bad("since is not a cursor a previous page gave")
	}
	return req, at, key, nil
}

// change is one change with its sort key.
type change struct {
	wire.Change
	key string
}

// changes answers wire.ChangesActionType for the tenant in ctx from its
// prepared tables (each table's current state: the change that made it)
// and tombstones (each drop in retention), ordered by time then by
// (namespace, table, op), after the request's cursor.
func (s *Service) changes(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, sinceAt, sinceKey, err := parseChanges(body)
	if err != nil {
		return nil, err
	}
	ts, err := s.preparedTenant(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	page := wire.ChangePage{Tenant: tenant, Changes: []wire.Change{}, Next: req.Since}
	if ts == nil {
		return marshalList(page)
	}
	var all []change
	after := func(at time.Time, key string) bool {
		return req.Since == "" || at.After(sinceAt) || at.Equal(sinceAt) && key > sinceKey
	}
	add := func(c wire.Change) {
		key := c.Namespace + "\x00" + c.Table + "\x00" + c.Op + "\x00" + c.CreationID
		if after(c.At, key) {
			all = append(all, change{c, key})
		}
	}
	at := func(a *array.Timestamp, i int) time.Time {
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC()
	}
	if c := ts.cols; c.Name != nil {
		for i := range ts.n {
			op := c.Op.Value(i)
			if op == "" {
				op = "update" // written before lake recorded the operation
				if c.Version.Value(i) <= 1 {
					op = "create"
				}
			}
			add(wire.Change{At: at(c.UpdatedAt, i), Op: op, Namespace: c.Namespace.Value(i), Table: c.Name.Value(i),
				Version: c.Version.Value(i), By: c.UpdatedBy.Value(i)})
		}
	}
	if d := ts.tombstones; d.Name != nil {
		for i := range d.Name.Len() {
			add(wire.Change{At: at(d.DroppedAt, i), Op: "drop", Namespace: d.Namespace.Value(i), Table: d.Name.Value(i),
				Version: d.Version.Value(i), By: d.DroppedBy.Value(i), CreationID: d.CreationID.Value(i)})
		}
	}
	slices.SortFunc(all, func(a, b change) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	for _, c := range all[:min(len(all), req.Limit)] {
		c.Cursor = wire.EncodeCursor(c.At, c.key)
		page.Changes = append(page.Changes, c.Change)
		page.Next = c.Cursor
	}
	return marshalList(page)
}
