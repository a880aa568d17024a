package catalog

// VersionKey is the metastore key of the version record of ref's
// registration creationID at version (VersionPrefix): for a reader that
// reads a registration's history by key with a store alone (refresh, for
// the earlier versions a snapshot row carries). Catalog.History is the
// one reader with the catalog's retention applied.
func VersionKey(ref TableRef, creationID string, version int64) string {
	return versionKey(ref, creationID, version)
}

// ParseVersionKey reads a version record's key, VersionPrefix stripped
// (as a scan of VersionPrefix hands it over): its table, the creation id
// of its registration and its version; false for a key that is not one.
func ParseVersionKey(stripped string) (ref TableRef, creationID string, version int64, ok bool) {
	return parseVersionKey(stripped)
}
