package wire

import "time"

// CredentialsActionType is the Flight action (DoAction) that vends
// credentials to read one table's files: a body CredentialsRequest (the
// tenant is the caller's, from its token), one Result, a JSON Credentials.
// The registration API answers the same body at
// GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/credentials.
const CredentialsActionType = "lake.credentials"

// CredentialsRequest names the table of a CredentialsActionType call.
type CredentialsRequest struct {
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
}

// Access kinds of a Credentials answer.
const (
	// AccessVended: the answer carries temporary AWS credentials that
	// read the table's prefix and nothing else (STS AssumeRole of lake's
	// data-reader role with a session policy naming the prefix).
	AccessVended = "vended"
	// AccessPath: a local file:// location under local mode's data root;
	// the path is the access and no credentials are needed.
	AccessPath = "path"
)

// Credentials is the answer of a vend: which table, the location the
// access covers, and either temporary AWS credentials (Access
// AccessVended) or none (AccessPath, Note says why).
type Credentials struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	// Location is the table's location the access covers
	// ("s3://bucket/prefix/" or "file:///path/").
	Location string `json:"location"`
	Access   string `json:"access"`
	// AccessKeyID, SecretAccessKey and SessionToken are the AWS
	// credentials (AccessVended only).
	AccessKeyID     string `json:"access_key_id,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	SessionToken    string `json:"session_token,omitempty"`
	// Expiration is when the credentials stop working (AccessVended only).
	Expiration time.Time `json:"expiration,omitzero"`
	// Region is the AWS region of the deployment that vended them, when
	// known (what an S3 client should use).
	Region string `json:"region,omitempty"`
	// Note says what a reader should know ("the path is the access").
	Note string `json:"note,omitempty"`
}

// TenantSettings is the body of the registration API's admin route
// GET /v1/admin/tenants/{tenant}/settings, and of a PUT there (which
// replaces AllowedPrefixes; UpdatedBy and UpdatedAt are ignored on a PUT):
// what an operator decides for a tenant. AllowedPrefixes are the
// "s3://bucket/prefix/" locations under which lake may vend credentials
// for the tenant's tables.
type TenantSettings struct {
	Tenant          string    `json:"tenant"`
	AllowedPrefixes []string  `json:"allowed_prefixes"`
	UpdatedBy       string    `json:"updated_by,omitempty"`
	UpdatedAt       time.Time `json:"updated_at,omitzero"`
}

// AllowPrefixRequest is the body of POST (add) and DELETE (remove) at
// /v1/admin/tenants/{tenant}/allowed-prefixes: one prefix.
type AllowPrefixRequest struct {
	Prefix string `json:"prefix"`
}

// Error codes of vending and of the admin routes.
const (
	// CodeLocationNotAllowed (403): the table's location is outside the
	// prefixes an operator allowed for its tenant, in one of lake's own
	// buckets, or not a location lake vends for (not s3://, a whole
	// bucket, a wildcard); the message names the reason.
	CodeLocationNotAllowed = "location_not_allowed"
	// CodeVendingNotConfigured (501): this deployment vends no
	// credentials (no data-reader role, or local mode without an STS
	// endpoint and role).
	CodeVendingNotConfigured = "vending_not_configured"
	// CodeVendingFailed (502): STS refused or failed the AssumeRole.
	CodeVendingFailed = "vending_failed"
	// CodeNotAdmin (403): an admin route called without operator rights
	// (a tenant's own token).
	CodeNotAdmin = "not_admin"
)
