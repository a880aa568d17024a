package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Credentials asks for access to ref's files (GET
// …/tables/{table}/credentials): temporary AWS credentials that read the
// table's prefix alone (wire.AccessVended), or, for a local path under
// local mode's data root, the path itself (wire.AccessPath). A location
// outside the tenant's allowed prefixes is an *Error of kind
// ErrLocationNotAllowed whose message names the reason; a deployment that
// vends nothing, ErrVendingNotConfigured; an STS refusal, ErrVendingFailed.
// The answer is never cached by the client.
func (c *Client) Credentials(ctx context.Context, ref catalog.TableRef) (wire.Credentials, error) {
	var creds wire.Credentials
	_, err := c.do(ctx, ref, http.MethodGet, tablePath(ref)+"/credentials", nil, nil, &creds)
	return creds, err
}

// TenantSettings returns what an operator decided for tenant (GET
// /v1/admin/tenants/{tenant}/settings): its allowed prefixes (none when
// never set), who changed them last and when. The admin routes take an
// operator's credentials only (local mode: a token of aud
// local.AdminAudience; AWS: IAM on /v1/admin/*); a tenant's own are an
// *Error of kind ErrNotAdmin.
func (c *Client) TenantSettings(ctx context.Context, tenant string) (wire.TenantSettings, error) {
	var s wire.TenantSettings
	_, err := c.do(ctx, catalog.TableRef{}, http.MethodGet, adminPath(tenant)+"/settings", nil, nil, &s)
	return s, err
}

// AllowPrefix adds prefix ("s3://bucket/prefix/") to tenant's allowed
// prefixes (POST …/allowed-prefixes; allowing one already allowed changes
// nothing) and returns the settings as stored. The API stores the
// canonical form; a prefix it could never vend under (not s3://, a whole
// bucket, one of lake's own buckets) is an *Error of kind ErrBadRequest
// saying why.
func (c *Client) AllowPrefix(ctx context.Context, tenant, prefix string) (wire.TenantSettings, error) {
	var s wire.TenantSettings
	_, err := c.do(ctx, catalog.TableRef{}, http.MethodPost, adminPath(tenant)+"/allowed-prefixes", wire.AllowPrefixRequest{Prefix: prefix}, nil, &s)
	return s, err
}

// DisallowPrefix removes prefix from tenant's allowed prefixes (DELETE
// …/allowed-prefixes?prefix=…; one not allowed changes nothing) and
// returns the settings as stored.
func (c *Client) DisallowPrefix(ctx context.Context, tenant, prefix string) (wire.TenantSettings, error) {
	var s wire.TenantSettings
	_, err := c.do(ctx, catalog.TableRef{}, http.MethodDelete, adminPath(tenant)+"/allowed-prefixes?prefix="+url.QueryEscape(prefix), nil, nil, &s)
	return s, err
}

// SetAllowedPrefixes replaces tenant's allowed prefixes with prefixes
// (PUT …/settings; none allows none) and returns the settings as stored.
// The caller keeps prefixes.
func (c *Client) SetAllowedPrefixes(ctx context.Context, tenant string, prefixes []string) (wire.TenantSettings, error) {
	if prefixes == nil {
		prefixes = []string{}
	}
	var s wire.TenantSettings
	_, err := c.do(ctx, catalog.TableRef{}, http.MethodPut, adminPath(tenant)+"/settings", wire.TenantSettings{Tenant: tenant, AllowedPrefixes: prefixes}, nil, &s)
	return s, err
}

func adminPath(tenant string) string { return "/v1/admin/tenants/" + url.PathEscape(tenant) }

// Sync takes ref's file snapshot (POST …/tables/{table}/sync): the Parquet
// files at its location into Iceberg metadata, which discovery's Iceberg
// REST catalog then serves. A location lake may not read for the tenant is
// an *Error of kind ErrLocationNotAllowed; a deployment that does not sync,
// or a sync that failed, an *Error with the API's code and reason.
func (c *Client) Sync(ctx context.Context, ref catalog.TableRef) (wire.SyncResult, error) {
	var res wire.SyncResult
	_, err := c.do(ctx, ref, http.MethodPost, tablePath(ref)+"/sync", nil, nil, &res)
	return res, err
}

// Preview reads ref's first rows (GET …/tables/{table}/preview): at most
// limit rows (0: the API's default, wire.DefaultPreviewLimit; at most
// wire.MaxPreviewLimit), of columns by name in that order (nil: all), read
// from the table's files through the same door as Credentials. A limit or
// column the API refuses is an *Error of kind ErrInvalidQuery naming it; a
// cap reached ErrPreviewLimit; a file that does not match the registered
// schema ErrSchemaMismatch naming the file; the door's refusals as for
// Credentials. The rows' numbers are json.Number, so an int64 past 2^53
// keeps its digits.
func (c *Client) Preview(ctx context.Context, ref catalog.TableRef, limit int, columns []string) (wire.Preview, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if columns != nil {
		q.Set("columns", strings.Join(columns, ","))
	}
	path := tablePath(ref) + "/preview"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var raw json.RawMessage
	if _, err := c.do(ctx, ref, http.MethodGet, path, nil, nil, &raw); err != nil {
		return wire.Preview{}, err
	}
	// Numbers stay json.Number: an int64 past 2^53 keeps its digits.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var p wire.Preview
	if err := dec.Decode(&p); err != nil {
		return wire.Preview{}, &TransportError{Base: c.base, Err: fmt.Errorf("unreadable preview: %w", err)}
	}
	return p, nil
}
