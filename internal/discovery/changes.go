package discovery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/wire"
)

const changesActionDescription = `The caller's tenant's change feed from the snapshot, in the order refresh published the changes: body {"since" (a cursor from a previous page; empty: from the first),"limit" (1–500)}; ` +
	`one Result, JSON {"tenant","changes":[{"cursor","at","op","namespace","table","version","by","creation_id"}],"next"}`

// parseChanges decodes and checks a changes body: the request, and its
// cursor's publication and key. Any failure is INVALID_ARGUMENT.
func parseChanges(body []byte) (wire.ChangesRequest, uint64, string, error) {
	var req wire.ChangesRequest
	bad := func(format string, args ...any) (wire.ChangesRequest, uint64, string, error) {
		return req, 0, "", status.Errorf(codes.InvalidArgument, "changes: "+format, args...)
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
		return req, 0, "", nil
	}
	gen, key, err := wire.DecodeCursor(req.Since)
	switch {
	case errors.Is(err, wire.ErrTimeCursor):
		return bad("since is a cursor of the feed's former order by time, which could skip changes published late; " +
			"the feed is now ordered by publication: ask again without since to read it from its first change")
	case err != nil:
		return bad("since is not a cursor a previous page gave")
	}
	return req, gen, key, nil
}

// changes answers wire.ChangesActionType for the tenant in ctx from its
// prepared tables (each table's current state: the change that made it)
// and tombstones (each drop in retention), in the prepared change order
// after the request's cursor: a binary search for the cursor, then the
// page's rows alone.
func (s *Service) changes(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, sinceGen, sinceKey, err := parseChanges(body)
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
	order, start := ts.changeIndex(), 0
	if req.Since != "" {
		var key []byte
		start = sort.Search(len(order), func(i int) bool {
			r := order[i]
			if p := ts.published(r); p != sinceGen {
				return p > sinceGen
			}
			key = ts.appendChangeKey(key[:0], r)
			return string(key) > sinceKey
		})
	}
	for _, r := range order[start:min(len(order), start+req.Limit)] {
		c := ts.change(r)
		page.Changes = append(page.Changes, c)
		page.Next = c.Cursor
	}
	return marshalList(page)
}

// changeIndex is the tenant's change feed order, made once, by the first
// call.
func (ts *tenantState) changeIndex() []int32 {
	ts.changesOnce.Do(func() { ts.changes = ts.changeOrder() })
	return ts.changes
}

// changeOrder returns the tenant's change feed order: its table rows (0 to
// n-1) and tombstones (n and after) by publication (the generation of the
// snapshot that brought the change in), then by key (namespace, table,
// op, creation id). Tables and tombstones each come sorted by name, so
// one merge orders them by key and a stable sort by publication does the
// rest: built once per prepared tenant (changeIndex), O(rows log rows)
// integer comparisons.
func (ts *tenantState) changeOrder() []int32 {
	n, m := ts.n, ts.numTombstones()
	order := make([]int32, 0, n+m)
	for i, j := 0, 0; i < n || j < m; {
		if j == m || i < n && ts.compareChangeKeys(int32(i), int32(n+j)) < 0 {
			order = append(order, int32(i))
			i++
		} else {
			order = append(order, int32(n+j))
			j++
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(ts.published(a), ts.published(b)) })
	return order
}

func (ts *tenantState) numTombstones() int {
	if ts.tombstones.Name == nil {
		return 0
	}
	return ts.tombstones.Name.Len()
}

// published is the generation in which change row r was published.
func (ts *tenantState) published(r int32) uint64 {
	if int(r) < ts.n {
		return ts.cols.Published.Value(int(r))
	}
	return ts.tombstones.Published.Value(int(r) - ts.n)
}

// changeKey returns change row r's key: its namespace, table, op and
// creation id (a table's is empty: its current registration).
func (ts *tenantState) changeKey(r int32) (ns, name, op, creationID string) {
	if i := int(r); i < ts.n {
		c := ts.cols
		op := c.Op.Value(i)
		if op == "" {
			op = "update" // written before lake recorded the operation
			if c.Version.Value(i) <= 1 {
				op = "create"
			}
		}
		return c.Namespace.Value(i), c.Name.Value(i), op, ""
	}
	d, i := ts.tombstones, int(r)-ts.n
	return d.Namespace.Value(i), d.Name.Value(i), "drop", d.CreationID.Value(i)
}

// appendChangeKey appends change row r's key as a cursor holds it, its
// parts NUL-separated (no name holds a NUL, so the bytes order as the
// parts do).
func (ts *tenantState) appendChangeKey(b []byte, r int32) []byte {
	ns, name, op, id := ts.changeKey(r)
	b = append(append(b, ns...), 0)
	b = append(append(b, name...), 0)
	b = append(append(b, op...), 0)
	return append(b, id...)
}

func (ts *tenantState) compareChangeKeys(a, b int32) int {
	ans, aname, aop, aid := ts.changeKey(a)
	bns, bname, bop, bid := ts.changeKey(b)
	return cmp.Or(strings.Compare(ans, bns), strings.Compare(aname, bname), strings.Compare(aop, bop), strings.Compare(aid, bid))
}

// change returns change row r as the wire has it, with its cursor.
func (ts *tenantState) change(r int32) wire.Change {
	at := func(a *array.Timestamp, i int) time.Time {
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC()
	}
	ns, name, op, id := ts.changeKey(r)
	c := wire.Change{Cursor: wire.EncodeCursor(ts.published(r), string(ts.appendChangeKey(nil, r))), Op: op, Namespace: ns, Table: name, CreationID: id}
	if i := int(r); i < ts.n {
		c.At, c.Version, c.By = at(ts.cols.UpdatedAt, i), ts.cols.Version.Value(i), ts.cols.UpdatedBy.Value(i)
	} else {
		d, i := ts.tombstones, i-ts.n
		c.At, c.Version, c.By = at(d.DroppedAt, i), d.Version.Value(i), d.DroppedBy.Value(i)
	}
	return c
}
