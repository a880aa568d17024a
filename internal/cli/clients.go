package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// apiClient calls the registration API, with a bearer token (local mode) or
// SigV4 (the AWS deployment's IAM-authorized API Gateway).
type apiClient struct {
	base   string
	token  string
	signer *v4.Signer
	creds  aws.CredentialsProvider
	region string
	http   *http.Client
}

func newAPIClient(ctx context.Context, base, token string, sigv4 bool) (*apiClient, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--api %q: want http(s)://host[:port][/stage]", base)
	}
	c := &apiClient{base: strings.TrimSuffix(base, "/"), token: token, http: &http.Client{Timeout: 60 * time.Second}}
	if sigv4 {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("load AWS config for SigV4: %w", err)
		}
		if cfg.Region == "" {
			return nil, errors.New("--sigv4 needs a region: set AWS_REGION")
		}
		c.signer, c.creds, c.region = v4.NewSigner(), cfg.Credentials, cfg.Region
	}
	return c, nil
}

// apiError is the registration API's error answer.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

func tablePath(ref catalog.TableRef) string {
	return "/v1/tenants/" + url.PathEscape(ref.Tenant) + "/namespaces/" + url.PathEscape(ref.Namespace) + "/tables"
}

// do sends one request and decodes a JSON answer into out (when not nil).
func (c *apiClient) do(ctx context.Context, method, path string, body any, hdr map[string]string, out any) (int, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if c.signer != nil {
		creds, err := c.creds.Retrieve(ctx)
		if err != nil {
			return 0, fmt.Errorf("AWS credentials: %w", err)
		}
		sum := sha256.Sum256(payload)
		if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", c.region, time.Now()); err != nil {
			return 0, fmt.Errorf("sign request: %w", err)
		}
	} else if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("registration API %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
			return resp.StatusCode, &apiError{Status: resp.StatusCode, Code: "http_error", Message: strings.TrimSpace(string(raw))}
		}
		return resp.StatusCode, &apiError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("registration API answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}

func (c *apiClient) register(ctx context.Context, ref catalog.TableRef, location, tableType string, schemaIPC []byte) (registerapi.Table, int, error) {
	var t registerapi.Table
	status, err := c.do(ctx, http.MethodPost, tablePath(ref), map[string]any{
		"name": ref.Name, "location": location, "table_type": tableType, "schema": schemaIPC,
	}, nil, &t)
	return t, status, err
}

func (c *apiClient) get(ctx context.Context, ref catalog.TableRef) (registerapi.Table, error) {
	var t registerapi.Table
	_, err := c.do(ctx, http.MethodGet, tablePath(ref)+"/"+url.PathEscape(ref.Name), nil, nil, &t)
	return t, err
}

func (c *apiClient) backfill(ctx context.Context, ref catalog.TableRef, version int64, schemaIPC []byte) (registerapi.Table, error) {
	var t registerapi.Table
	_, err := c.do(ctx, http.MethodPut, tablePath(ref)+"/"+url.PathEscape(ref.Name),
		map[string]any{"schema": schemaIPC, "only_if_no_schema": true},
		map[string]string{"If-Match": fmt.Sprintf(`"%d"`, version)}, &t)
	return t, err
}

func (c *apiClient) drop(ctx context.Context, ref catalog.TableRef) error {
	_, err := c.do(ctx, http.MethodDelete, tablePath(ref)+"/"+url.PathEscape(ref.Name), nil, nil, nil)
	return err
}

// discoveryClient is a Flight SQL client with the caller's bearer token.
type discoveryClient struct {
	c     *flightsql.Client
	token string
}

// newDiscoveryClient dials addr: host:port, grpc://host:port or
// grpc+tls://host:port.
func newDiscoveryClient(addr, token string) (*discoveryClient, error) {
	creds := insecure.NewCredentials()
	switch {
	case strings.HasPrefix(addr, "grpc+tls://"):
		addr = strings.TrimPrefix(addr, "grpc+tls://")
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	case strings.HasPrefix(addr, "grpc://"):
		addr = strings.TrimPrefix(addr, "grpc://")
	}
	c, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("discovery %s: %w", addr, err)
	}
	return &discoveryClient{c: c, token: token}, nil
}

func (d *discoveryClient) Close() error { return d.c.Close() }

func (d *discoveryClient) ctx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+d.token)
}

// tableRow is one GetTables answer row.
type tableRow struct {
	Catalog   string        `json:"tenant"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Type      string        `json:"table_type"`
	Schema    *arrow.Schema `json:"-"`
}

// escapeLike makes s a LIKE pattern that matches only s.
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// tables runs GetTables and collects the rows, decoding schemas when asked.
func (d *discoveryClient) tables(ctx context.Context, opts *flightsql.GetTablesOpts) ([]tableRow, error) {
	got, err := flightclient.GetTables(d.ctx(ctx), d.c, opts)
	if err != nil {
		return nil, err
	}
	rows := make([]tableRow, len(got))
	for i, g := range got {
		rows[i] = tableRow{Catalog: g.Catalog, Namespace: g.Namespace, Name: g.Name, Type: g.Type}
		if opts.IncludeSchema {
			if rows[i].Schema, err = catalog.DecodeSchema(g.Schema); err != nil {
				return nil, fmt.Errorf("schema of %s.%s: %w", g.Namespace, g.Name, err)
			}
		}
	}
	return rows, nil
}

// schemasWherePossible lists tables without schemas, then fills in the
// schema of every table that has one: one request per namespace, and one
// per table in a namespace that holds a table without a schema.
func (d *discoveryClient) schemasWherePossible(ctx context.Context, opts *flightsql.GetTablesOpts) ([]tableRow, error) {
	names := &flightsql.GetTablesOpts{Catalog: opts.Catalog, DbSchemaFilterPattern: opts.DbSchemaFilterPattern,
		TableNameFilterPattern: opts.TableNameFilterPattern, TableTypes: opts.TableTypes}
	rows, err := d.tables(ctx, names)
	if err != nil {
		return nil, err
	}
	schemas := map[[2]string]*arrow.Schema{}
	done := map[string]bool{}
	for _, r := range rows {
		if done[r.Namespace] {
			continue
		}
		done[r.Namespace] = true
		ns := escapeLike(r.Namespace)
		got, err := d.tables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &ns, IncludeSchema: true})
		if status.Code(err) == codes.FailedPrecondition {
			for _, t := range rows {
				if t.Namespace != r.Namespace {
					continue
				}
				name := escapeLike(t.Name)
				one, err := d.tables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &ns, TableNameFilterPattern: &name, IncludeSchema: true})
				if err == nil && len(one) == 1 {
					schemas[[2]string{t.Namespace, t.Name}] = one[0].Schema
				} else if err != nil && status.Code(err) != codes.FailedPrecondition {
					return nil, err
				}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, t := range got {
			schemas[[2]string{t.Namespace, t.Name}] = t.Schema
		}
	}
	for i := range rows {
		rows[i].Schema = schemas[[2]string{rows[i].Namespace, rows[i].Name}]
	}
	return rows, nil
}
