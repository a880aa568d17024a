// Package vending is lake's one door to table data: it turns a table's tenant
// and location into short-lived AWS credentials that read exactly that
// table's files and nothing else (issue 40).
//
// The pieces, each usable alone:
//
//   - ParseLocation validates an "s3://bucket/prefix/" location: S3's bucket
//     naming rules, a non-empty prefix (a whole bucket is not table-scoped),
//     and nothing in the prefix that would widen an IAM resource pattern
//     ("*", "?", "$", "." and ".." segments, "//", control characters, and
//     any character an STS session tag value may not hold: the prefix is
//     letters, digits and "_.:/=+-@"), at most MaxLocationLength (256)
//     characters.
//
//   - ParseMetadataLocation validates a table's Iceberg metadata prefix in
//     lake's metadata store, exactly "s3://bucket/tables/<table-uuid>/metadata/"
//     with a canonical lower-case UUID (issue 41: what lake's sync writes);
//     SyncedMetadata derives it from a synced table's metadata file.
//
//   - SessionPolicy builds the inline session policy, read only, in
//     Polaris's shape, written compactly (no Sids, one value as a string);
//     SessionPolicyWithMetadata adds one read-only grant of the table's
//     metadata prefix (its objects in the one object statement, its own
//     listing statement, its bucket's location). For the longest location
//     ParseLocation accepts (a 63-character bucket, 256 characters in all)
//     the policy is 891 characters (LongestPolicyLength), 1,340 with the
//     longest metadata prefix (a 63-character bucket:
//     LongestPolicyLengthWithMetadata), both measured and pinned by a test,
//     against STS's limit of 2,048 characters of plaintext: 35% margin at
//     worst. STS also limits the packed size of policy and tags together
//     and reports it only in AssumeRole's answer, as a percentage
//     (Credentials.PackedPolicySize).
//
//   - SessionName and SessionTags name the tenant, namespace and table in the
//     assumed-role session, for CloudTrail; LocationTags name the bucket and
//     prefix, which the reader role's own policy grants reads by (ABAC), so
//     a session reads no more than its tags name even without the session
//     policy; MetadataTags name the metadata prefix (lake:meta-bucket,
//     lake:meta-prefix) for the role's ABAC grant of metadata.
//
//   - Guard is the confused-deputy check: a location is vendable only under a
//     prefix an operator allowed for the tenant, never in lake's own buckets.
//     A table's metadata prefix (Request.Metadata) is outside it: lake wrote
//     it for that table, and only its one shape is vended.
//
//   - Vendor puts them together: guard, AssumeRole of the data-reader role with
//     the session policy, name and tags (15 min by default, 15 min to 12 h),
//     a bounded LRU cache per (tenant, namespace, table, location, metadata
//     prefix) until 2 min
//     (or a tenth of the duration, if longer) before expiry, one AssumeRole
//     per key at a time, and an Observer told of every successful vend (who,
//     tenant, table, prefix, expiry). STS sits behind a small interface owned
//     here (AssumeInput → Credentials).
//
//   - STS serves that interface with aws-sdk-go-v2's sts.Client (NewSTS takes
//     anything with its AssumeRole method): role, session name, policy, tags
//     and duration go out as AssumeRoleInput (with an optional ExternalId and
//     SourceIdentity); credentials, expiration and PackedPolicySize come
//     back. A refusal is an *STSError keeping STS's code and the SDK's
//     smithy.APIError; errors.Is matches ErrPolicyTooLarge for
//     PackedPolicyTooLarge and ErrAccessDenied for AccessDenied. Its test
//     points a real sts.Client at a small AssumeRole endpoint speaking STS's
//     Query protocol (form in, XML out).
//
//   - Door is the one path every surface answers a table's access through
//     (discovery's Flight action lake.credentials, the registration API's
//     GET …/tables/{t}/credentials and so `lake credentials`, Iceberg REST's
//     vended credentials): s3:// locations through the Vendor, a local path
//     under local mode's --data-root as its own access ("the path is the
//     access"), anything else refused; Code classifies its errors for a
//     surface (location_not_allowed, vending_not_configured,
//     vending_failed).
//
//   - LogObserver and EventObserver record every vend: a log line, and an
//     EventBridge event ("Credentials Vended", source lake.catalog) on the
//     bus of the change events.
//
//   - Config and Open: what a program reads (ConfigFromEnv: the variables
//     the CDK stack sets; local mode's flags) and the Door it builds with
//     the SDK's STS and EventBridge clients.
//
// Tests: the vending logic against a fake assumer; the STS adapter against
// an AssumeRole endpoint speaking STS's Query protocol; and the enforced
// suite (enforced_test.go), where testenv's STS stand-in turns lake's
// session policy into a versitygw IAM user's inline policy and versitygw
// evaluates it on every S3 request, so every allow and deny is the S3
// server's own.
package vending
