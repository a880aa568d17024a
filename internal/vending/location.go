package vending

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// MaxLocationLength is the longest location string ParseLocation accepts,
// "s3://" included. It is chosen so that the session policy for the longest
// location, with a table's metadata prefix too, stays a quarter below STS's
// 2,048-character limit (see LongestPolicyLengthWithMetadata).
const MaxLocationLength = 256

// Location is a table's data location: a bucket and a key prefix within it.
// The prefix is never empty and always ends with one "/", so that it matches
// on a path-segment boundary ("sales/" does not match "salesforce/").
type Location struct {
	Bucket string // the S3 bucket name
	Prefix string // the key prefix, without a leading "/", ending with "/"
}

// String renders the location as "s3://bucket/prefix/"; ParseLocation of the
// result returns an equal Location.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// Reasons a location is refused, matched with errors.Is on a *LocationError.
var (
	ErrScheme      = errors.New(`scheme is not "s3://"`)
	ErrBucket      = errors.New("bucket name breaks S3's naming rules")
	ErrEmptyPrefix = errors.New("prefix is empty: a whole bucket is not table-scoped")
	ErrPrefixSlash = errors.New(`prefix does not end with "/"`)
	ErrDoubleSlash = errors.New(`prefix has an empty segment ("//" or a leading "/")`)
	ErrDotSegment  = errors.New(`prefix has a "." or ".." segment`)
	ErrControl     = errors.New("prefix has a control character")
	ErrWildcard    = errors.New(`prefix has an IAM wildcard ("*" or "?")`)
	ErrCharacter   = errors.New(`prefix has a character other than letters, digits and "_.:/=+-@" (the characters an STS session tag may hold, which name the prefix to the reader role)`)
	ErrTooLong     = fmt.Errorf("longer than %d characters", MaxLocationLength)
)

// LocationError is the error of ParseLocation and SessionPolicy: the location
// given and why it was refused (one of the Err… reasons above).
type LocationError struct {
	Location string
	Err      error
}

func (e *LocationError) Error() string {
	return fmt.Sprintf("vending: location %q: %v", e.Location, e.Err)
}

func (e *LocationError) Unwrap() error { return e.Err }

// ParseLocation parses "s3://bucket/prefix/" (the trailing "/" may be left
// out) into a Location. It refuses, with a *LocationError, anything that is
// not one table's prefix or that could widen an IAM resource pattern: another
// scheme, a bucket name S3 would not create, an empty prefix, empty, "." or
// ".." segments, control characters, the wildcards "*" and "?", and any other
// character that is not a letter, digit or one of "_.:/=+-@" (what an STS
// session tag value may hold: the prefix is also a session tag, which the
// reader role's own policy grants reads by; this also keeps "$" of IAM
// policy variables out), and locations longer than MaxLocationLength.
func ParseLocation(s string) (Location, error) {
	fail := func(err error) (Location, error) { return Location{}, &LocationError{Location: s, Err: err} }
	if len(s) > MaxLocationLength {
		return fail(ErrTooLong)
	}
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return fail(ErrScheme)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	loc := Location{Bucket: bucket, Prefix: prefix}
	if err := loc.check(); err != nil {
		return fail(err)
	}
	if len(loc.String()) > MaxLocationLength {
		return fail(ErrTooLong)
	}
	return loc, nil
}

// check returns the first reason l is not a valid location, or nil.
func (l Location) check() error {
	if len(l.String()) > MaxLocationLength {
		return ErrTooLong
	}
	if !validBucket(l.Bucket) {
		return ErrBucket
	}
	if l.Prefix == "" {
		return ErrEmptyPrefix
	}
	for i := 0; i < len(l.Prefix); i++ {
		switch c := l.Prefix[i]; {
		case c < 0x20 || c == 0x7f:
			return ErrControl
		case c == '*' || c == '?':
			return ErrWildcard
		case !tagChar(c) || c == ' ':
			return ErrCharacter
		}
	}
	if !strings.HasSuffix(l.Prefix, "/") {
		return ErrPrefixSlash
	}
	for _, seg := range strings.Split(strings.TrimSuffix(l.Prefix, "/"), "/") {
		switch seg {
		case "":
			return ErrDoubleSlash
		case ".", "..":
			return ErrDotSegment
		}
	}
	return nil
}

// validBucket reports whether name follows S3's general-purpose bucket naming
// rules: 3–63 lower-case letters, digits, "." and "-", beginning and ending
// with a letter or digit, no "..", not an IP address, none of the reserved
// prefixes and suffixes.
func validBucket(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '.' && c != '-' {
			return false
		}
		if !alnum && (i == 0 || i == len(name)-1) {
			return false
		}
	}
	if strings.Contains(name, "..") {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return false
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	for _, s := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, s) {
			return false
		}
	}
	return true
}

// ErrMetadataShape is the reason a table's metadata location is refused: lake
// vends only the shape its Iceberg sync writes, one table's
// "tables/<table-uuid>/metadata/" in lake's metadata store.
var ErrMetadataShape = errors.New(`metadata prefix is not "tables/<table-uuid>/metadata/" with a lower-case UUID`)

// ParseMetadataLocation parses a table's Iceberg metadata prefix,
// "s3://bucket/tables/<table-uuid>/metadata/", as lake's sync writes it in
// lake's metadata store: ParseLocation's rules, and a prefix of exactly
// "tables/", a canonical lower-case UUID (8-4-4-4-12 hex digits) and
// "/metadata/". Anything else is a *LocationError (ErrMetadataShape, or
// ParseLocation's reason).
func ParseMetadataLocation(s string) (Location, error) {
	loc, err := ParseLocation(s)
	if err != nil {
		return Location{}, err
	}
	if err := loc.checkMetadata(); err != nil {
		return Location{}, &LocationError{Location: s, Err: err}
	}
	return loc, nil
}

// checkMetadata returns the first reason l is not a table's metadata
// location, or nil.
func (l Location) checkMetadata() error {
	if err := l.check(); err != nil {
		return err
	}
	rest, ok := strings.CutPrefix(l.Prefix, "tables/")
	if !ok {
		return ErrMetadataShape
	}
	id, ok := strings.CutSuffix(rest, "/metadata/")
	if !ok || !canonicalUUID(id) {
		return ErrMetadataShape
	}
	return nil
}

// canonicalUUID reports whether s is a UUID in its canonical form: 36
// characters, lower-case hex digits with "-" at 8, 13, 18 and 23.
func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// SyncedMetadata returns the metadata prefix to vend with a table whose
// current Iceberg metadata file is metadataLocation (catalog.IcebergState's
// MetadataLocation) and whose table-uuid is tableUUID: the file's directory,
// "s3://bucket/tables/<tableUUID>/metadata/", when the file lies directly
// in it and ParseMetadataLocation accepts it; otherwise "" (a local
// file:// metadata location, another table's prefix, any other shape),
// which vends nothing more.
func SyncedMetadata(metadataLocation, tableUUID string) string {
	i := strings.LastIndexByte(metadataLocation, '/')
	if i < 0 || i == len(metadataLocation)-1 {
		return ""
	}
	dir := metadataLocation[:i+1]
	loc, err := ParseMetadataLocation(dir)
	if err != nil || loc.String() != dir || loc.Prefix != "tables/"+tableUUID+"/metadata/" {
		return ""
	}
	return dir
}
