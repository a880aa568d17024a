package vending

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Session tag keys naming a vend's tenant, namespace and table, for
// CloudTrail attribution and for ABAC conditions on the reader role.
const (
	TagTenant    = "lake:tenant"
	TagNamespace = "lake:namespace"
	TagTable     = "lake:table"
)

// Session tag keys naming the location a vend reads. The reader role's own
// policy grants reads only on "arn:aws:s3:::${aws:PrincipalTag/lake:bucket}/
// ${aws:PrincipalTag/lake:prefix}*" (attribute-based access control), so a
// session reads no more than its tags name even without a session policy,
// and a session without them reads nothing.
const (
	TagBucket = "lake:bucket"
	TagPrefix = "lake:prefix"
)

// Session tag keys naming the table's Iceberg metadata prefix in lake's
// metadata store, on a vend with one (Request.Metadata): the reader role's
// ABAC grant for metadata reads only "arn:aws:s3:::${aws:PrincipalTag/
// lake:meta-bucket}/${aws:PrincipalTag/lake:meta-prefix}*".
const (
	TagMetaBucket = "lake:meta-bucket"
	TagMetaPrefix = "lake:meta-prefix"
)

// Limits of STS: RoleSessionName is 2–64 characters; a session tag value is
// at most 256 characters.
const (
	maxSessionName = 64
	maxTagValue    = 256
	hashLength     = 16 // hex characters of SHA-256 kept in names
	// maxNameTenant is the longest tenant kept in a session name:
	// "lake-" + tenant + "-" + hash fits in maxSessionName.
	maxNameTenant = maxSessionName - len("lake-") - 1 - hashLength
)

// Tag is an STS session tag.
type Tag struct {
	Key, Value string
}

// SessionName returns the AssumeRole RoleSessionName for a vend of a table:
// "lake-<tenant>-<hash>", where tenant is cut to 42 characters and each
// character outside STS's [\w+=,.@-] becomes "_", and hash is the first 16 hex
// digits of the SHA-256 of tenant, namespace and table (so the name is the
// same for the same table, differs between tables, and is at most 64
// characters). CloudTrail shows it in the assumed-role ARN.
func SessionName(tenant, namespace, table string) string {
	t := sanitize(tenant, func(c byte) bool { return wordChar(c) || strings.IndexByte("+=,.@-", c) >= 0 })
	if len(t) > maxNameTenant {
		t = t[:maxNameTenant]
	}
	return "lake-" + t + "-" + shortHash(tenant+"\x00"+namespace+"\x00"+table)
}

// SessionTags returns the session tags naming tenant, namespace and table
// (keys TagTenant, TagNamespace, TagTable, in that order). A name made only
// of the characters STS allows in a tag value (ASCII letters, digits, space
// and _.:/=+-@) and at most 256 characters long is its own value; any other
// name is sanitized (each other byte becomes "_"), cut to 239 characters and
// followed by "+" and the first 16 hex digits of the SHA-256 of the name, so
// distinct names keep distinct values.
func SessionTags(tenant, namespace, table string) []Tag {
	return []Tag{
		{Key: TagTenant, Value: tagValue(tenant)},
		{Key: TagNamespace, Value: tagValue(namespace)},
		{Key: TagTable, Value: tagValue(table)},
	}
}

// LocationTags returns the session tags naming loc (keys TagBucket and
// TagPrefix). Both values are loc's own text: ParseLocation accepts only
// characters STS allows in a tag value, and at most 256 characters in all.
func LocationTags(loc Location) []Tag {
	return []Tag{{Key: TagBucket, Value: loc.Bucket}, {Key: TagPrefix, Value: loc.Prefix}}
}

// MetadataTags returns the session tags naming a table's metadata location
// meta (keys TagMetaBucket and TagMetaPrefix), its own text as for
// LocationTags.
func MetadataTags(meta Location) []Tag {
	return []Tag{{Key: TagMetaBucket, Value: meta.Bucket}, {Key: TagMetaPrefix, Value: meta.Prefix}}
}

func tagValue(name string) string {
	s := sanitize(name, tagChar)
	if s == name && len(name) <= maxTagValue {
		return name
	}
	if max := maxTagValue - 1 - hashLength; len(s) > max {
		s = s[:max]
	}
	return s + "+" + shortHash(name)
}

func tagChar(c byte) bool { return wordChar(c) || strings.IndexByte(" .:/=+-@", c) >= 0 }

func wordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// sanitize replaces each byte of s for which ok is false with "_".
func sanitize(s string, ok func(byte) bool) string {
	b := []byte(s)
	for i, c := range b {
		if !ok(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLength]
}
