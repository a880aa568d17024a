// Package apiclient is a client of lake's registration HTTP API (see
// internal/registerapi; its bodies are pkg/wire's): register, read, update
// and drop tables, access to a table's files and an operator's tenant
// settings (vending.go), and local mode's refresh. It authenticates with a
// bearer token (local mode) or signs each request with AWS SigV4 (the AWS
// deployment's IAM-authorized API Gateway).
//
// Every error the API answers comes back as an *Error whose kind is one of
// the catalog's sentinels (catalog.ErrNotFound, catalog.ErrExists, …) or
// this package's, so callers decide with errors.Is, never on status codes.
package apiclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// maxAnswerBytes bounds an answer body read into memory.
const maxAnswerBytes = 64 << 20

// Options configures New. Zero values take the documented defaults.
type Options struct {
	// Token is sent as "Authorization: Bearer <Token>" when set and SigV4
	// is nil.
	Token string
	// SigV4, when set, signs every request for execute-api instead.
	SigV4 *SigV4
	// HTTPClient sends the requests. Default: an http.Client with a 60 s
	// timeout.
	HTTPClient *http.Client
}

// SigV4 signs requests with AWS credentials for API Gateway (service
// execute-api), the body's hash included in the signature.
type SigV4 struct {
	Credentials aws.CredentialsProvider
	Region      string
	// Now is the signing time. Default time.Now.
	Now func() time.Time
}

// SigV4From takes the credentials and region of an AWS configuration (as
// config.LoadDefaultConfig returns it). A configuration without a region is
// an error: a signature names its region.
func SigV4From(cfg aws.Config) (*SigV4, error) {
	if cfg.Region == "" {
		return nil, errors.New("apiclient: SigV4 signing needs a region: set AWS_REGION")
	}
	if cfg.Credentials == nil {
		return nil, errors.New("apiclient: SigV4 signing needs AWS credentials")
	}
	return &SigV4{Credentials: cfg.Credentials, Region: cfg.Region}, nil
}

// Client calls one registration API. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	sigv4 *SigV4
	http  *http.Client
}

// New returns a client of the API at base: http(s)://host[:port][/stage].
func New(base string, opts Options) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("apiclient: API URL %q: want http(s)://host[:port][/stage]", base)
	}
	c := &Client{base: strings.TrimSuffix(base, "/"), token: opts.Token, sigv4: opts.SigV4, http: opts.HTTPClient}
	if c.http == nil {
		c.http = &http.Client{Timeout: 60 * time.Second}
	}
	if c.sigv4 != nil && c.sigv4.Now == nil {
		s := *c.sigv4
		s.Now = time.Now
		c.sigv4 = &s
	}
	return c, nil
}

// Base returns the API's base URL.
func (c *Client) Base() string { return c.base }

// Table is a registered table as the API answers it (wire.Table).
type Table = wire.Table

// Spec is what Register and Update send. Update leaves Location,
// TableType and Description unchanged when they are empty and Properties
// when it is nil (UpdateOptions.ClearDescription and an empty non-nil map
// clear them).
type Spec struct {
	Location  string
	TableType string
	// SchemaIPC is the table's Arrow schema as an IPC schema message
	// (catalog.EncodeSchema).
	SchemaIPC []byte
	// Description and Properties are bounded by catalog's
	// MaxDescriptionBytes and MaxProperties… limits.
	Description string
	Properties  map[string]string
	// Compatibility is the table's compatibility mode (none, backward,
	// forward, full); empty sends none, and an update keeps the mode.
	Compatibility string
	// Protected, when set, protects the table from drops (true) or lifts
	// the protection (false); nil sends nothing (an update keeps it).
	Protected *bool
}

// Register registers ref with spec. created is false when an identical
// registration was already stored (a retry); a different one is an *Error
// of kind catalog.ErrExists.
func (c *Client) Register(ctx context.Context, ref catalog.TableRef, spec Spec) (t Table, created bool, err error) {
	body := map[string]any{"name": ref.Name, "location": spec.Location, "table_type": spec.TableType, "schema": spec.SchemaIPC}
	if spec.Description != "" {
		body["description"] = spec.Description
	}
	if len(spec.Properties) > 0 {
		body["properties"] = spec.Properties
	}
	if spec.Compatibility != "" {
		body["compatibility"] = spec.Compatibility
	}
	if spec.Protected != nil {
		body["protected"] = *spec.Protected
	}
	status, err := c.do(ctx, ref, http.MethodPost, tablesPath(ref), body, nil, &t)
	return t, status == http.StatusCreated, err
}

// Get reads ref's registration, strongly consistent. A missing table is an
// *Error of kind catalog.ErrNotFound.
func (c *Client) Get(ctx context.Context, ref catalog.TableRef) (Table, error) {
	var t Table
	_, err := c.do(ctx, ref, http.MethodGet, tablePath(ref), nil, nil, &t)
	return t, err
}

// UpdateOptions make an update conditional.
type UpdateOptions struct {
	// IfMatch, when set, applies the update only to the registration in
	// the state this ETag (Table.ETag) names; any other state (another
	// version, or the table dropped and registered again) is an *Error of
	// kind ErrVersionMismatch (which is also catalog.ErrConflict).
	IfMatch string
	// OnlyIfNoSchema applies it only to a registration without a schema (a
	// backfill); one with a schema is an *Error of kind catalog.ErrConflict.
	OnlyIfNoSchema bool
	// ClearDescription removes the description when Spec.Description is
	// empty.
	ClearDescription bool
}

// Update replaces ref's schema (and location, type, description and
// properties where spec gives them), bumping its version.
func (c *Client) Update(ctx context.Context, ref catalog.TableRef, spec Spec, opts UpdateOptions) (Table, error) {
	body := map[string]any{"schema": spec.SchemaIPC}
	if spec.Location != "" {
		body["location"] = spec.Location
	}
	if spec.TableType != "" {
		body["table_type"] = spec.TableType
	}
	if spec.Description != "" || opts.ClearDescription {
		body["description"] = spec.Description
	}
	if spec.Properties != nil {
		body["properties"] = spec.Properties
	}
	if opts.OnlyIfNoSchema {
		body["only_if_no_schema"] = true
	}
	if spec.Compatibility != "" {
		body["compatibility"] = spec.Compatibility
	}
	if spec.Protected != nil {
		body["protected"] = *spec.Protected
	}
	var hdr http.Header
	if opts.IfMatch != "" {
		hdr = http.Header{"If-Match": {opts.IfMatch}}
	}
	var t Table
	_, err := c.do(ctx, ref, http.MethodPut, tablePath(ref), body, hdr, &t)
	return t, err
}

// Drop deletes ref's registration (its data is not touched). A missing
// table is an *Error of kind catalog.ErrNotFound.
func (c *Client) Drop(ctx context.Context, ref catalog.TableRef) error {
	_, err := c.do(ctx, ref, http.MethodDelete, tablePath(ref), nil, nil, nil)
	return err
}

// Undrop restores ref, dropped, from the tombstone of creation id
// creationID (lake dropped lists them), and returns the restored table. No
// such drop in retention is an *Error of kind catalog.ErrNotFound; a name
// registered again since the drop, catalog.ErrExists.
func (c *Client) Undrop(ctx context.Context, ref catalog.TableRef, creationID string) (Table, error) {
	var t Table
	_, err := c.do(ctx, ref, http.MethodPost, tablePath(ref)+"/undrop", map[string]string{"creation_id": creationID}, nil, &t)
	return t, err
}

// Dropped returns tenant's dropped tables in retention, newest drop first
// (GET /v1/tenants/{tenant}/dropped, all of them: a tenant's drops in
// retention are few). The API answers from the catalog, locally and on
// AWS, so a drop is listed as soon as it is made.
func (c *Client) Dropped(ctx context.Context, tenant string) (wire.DroppedPage, error) {
	var page wire.DroppedPage
	_, err := c.do(ctx, catalog.TableRef{}, http.MethodGet, "/v1/tenants/"+url.PathEscape(tenant)+"/dropped", nil, nil, &page)
	return page, err
}

// History returns a page of ref's kept versions, newest first, below
// version before (0: from the newest), at most limit, of the registration
// of creation id creationID (empty: the one registered now; a dropped
// table's from lake dropped), and the before of the next page (0: none).
func (c *Client) History(ctx context.Context, ref catalog.TableRef, creationID string, before int64, limit int) ([]Table, int64, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if creationID != "" {
		q.Set("creation_id", creationID)
	}
	var page wire.VersionPage
	_, err := c.do(ctx, ref, http.MethodGet, tablePath(ref)+"/versions?"+q.Encode(), nil, nil, &page)
	return page.Versions, page.NextBefore, err
}

// Version returns ref as it was at version v (of the registration of
// creation id creationID; empty: the one registered now). A version no
// longer kept is an *Error of kind catalog.ErrNotFound.
func (c *Client) Version(ctx context.Context, ref catalog.TableRef, creationID string, v int64) (Table, error) {
	path := tablePath(ref) + "/versions/" + strconv.FormatInt(v, 10)
	if creationID != "" {
		path += "?creation_id=" + url.QueryEscape(creationID)
	}
	var t Table
	_, err := c.do(ctx, ref, http.MethodGet, path, nil, nil, &t)
	return t, err
}

// Diff returns what changed in ref's registration (of creation id
// creationID; empty: the one registered now) from version from to version
// to (0: the newest kept): GET …/tables/{table}/diff.
func (c *Client) Diff(ctx context.Context, ref catalog.TableRef, creationID string, from, to int64) (wire.Diff, error) {
	q := url.Values{"from": {strconv.FormatInt(from, 10)}}
	if to > 0 {
		q.Set("to", strconv.FormatInt(to, 10))
	}
	if creationID != "" {
		q.Set("creation_id", creationID)
	}
	var d wire.Diff
	_, err := c.do(ctx, ref, http.MethodGet, tablePath(ref)+"/diff?"+q.Encode(), nil, nil, &d)
	return d, err
}

// RefreshResult is what local mode's refresh answers (wire.RefreshResult:
// the caller's tenant and its table count; it tells a tenant nothing
// catalog-wide), and what the refresh Lambda answers lake refresh --function
// (its outcome and generation, and Counts, catalog-wide).
type RefreshResult struct {
	wire.RefreshResult
	// Counts are catalog-wide: the refresh Lambda's answer has them.
	Counts catalog.Counts
}

// Refresh asks local mode to publish a snapshot now (POST /v1/refresh; the
// AWS deployment has no such route: invoke its refresh Lambda instead).
func (c *Client) Refresh(ctx context.Context) (RefreshResult, error) {
	var res RefreshResult
	_, err := c.do(ctx, catalog.TableRef{}, http.MethodPost, "/v1/refresh", nil, nil, &res)
	return res, err
}

func tablesPath(ref catalog.TableRef) string {
	return "/v1/tenants/" + url.PathEscape(ref.Tenant) + "/namespaces/" + url.PathEscape(ref.Namespace) + "/tables"
}

func tablePath(ref catalog.TableRef) string { return tablesPath(ref) + "/" + url.PathEscape(ref.Name) }

// do sends one request for ref and decodes a JSON answer into out (when
// not nil). It returns the HTTP status when an answer arrived.
func (c *Client) do(ctx context.Context, ref catalog.TableRef, method, path string, body any, hdr http.Header, out any) (int, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("apiclient: encode request: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return 0, fmt.Errorf("apiclient: %w", err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Local mode answers a write without Origin only with this header, which
	// no web form can send (internal/local, guard.go).
	req.Header.Set("X-Lake-Request", "1")
	if err := c.authorize(ctx, req, payload); err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, &TransportError{Base: c.base, Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return resp.StatusCode, &TransportError{Base: c.base, Err: err}
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, decodeError(resp.StatusCode, raw, ref)
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, &TransportError{Base: c.base, Err: fmt.Errorf("unreadable answer (HTTP %d): %w", resp.StatusCode, err)}
		}
	}
	return resp.StatusCode, nil
}

// authorize adds the bearer token or the SigV4 signature.
func (c *Client) authorize(ctx context.Context, req *http.Request, payload []byte) error {
	if c.sigv4 == nil {
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		return nil
	}
	creds, err := c.sigv4.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("apiclient: AWS credentials: %w", err)
	}
	sum := sha256.Sum256(payload)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", c.sigv4.Region, c.sigv4.Now()); err != nil {
		return fmt.Errorf("apiclient: sign request: %w", err)
	}
	return nil
}

// TransportError is a request that got no usable answer: the API was
// unreachable, the connection broke, or the answer was not JSON.
type TransportError struct {
	Base string
	Err  error
}

func (e *TransportError) Error() string { return "registration API " + e.Base + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// unwrapURLError drops net/http's `Post "url": ` wrapper, which repeats
// the address the caller already names.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
