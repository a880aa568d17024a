package catalog

import "slices"

// EncodeBlobV1 writes format version 1, for fixtures of older refreshes.
var EncodeBlobV1 = encodeBlobV1

// Lookup returns the table ref, if the snapshot holds it (tests only).
func (s *Snapshot) Lookup(ref TableRef) (*Table, bool) {
	ts := s.Tenant(ref.Tenant)
	i, ok := slices.BinarySearchFunc(ts, ref, func(t Table, r TableRef) int { return t.Ref.Compare(r) })
	if !ok {
		return nil, false
	}
	return &ts[i], true
}
