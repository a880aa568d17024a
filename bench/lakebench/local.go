package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/testenv"
)

// bigMessages lets a client receive messages up to 256 MiB: the SQLite
// peer answers GetTables in one record batch, over gRPC's default 4 MiB
// receive limit at 1,000 tables. Every client of a comparison gets it.
var bigMessages = grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20))

// localLake is a `bin/lake local` process on loopback ports, with a data
// folder of its own and a dev token for one tenant.
type localLake struct {
	proc                *testenv.Process
	dataDir             string
	apiAddr, flightAddr string
	tenant, token       string
}

// namedSchema is a table to register: its name and its schema as an Arrow
// IPC schema message.
type namedSchema struct {
	name string
	ipc  []byte
}

// startLocalLake starts bin/lake local with no demo catalog and a token for
// tenant. stop ends it and removes its data.
func startLocalLake(procs *procSet, tenant string) (*localLake, error) {
	const lakeBin = "bin/lake"
	if _, err := os.Stat(lakeBin); err != nil {
		return nil, fmt.Errorf("%s missing: run `make build`", lakeBin)
	}
	dataDir, err := os.MkdirTemp("", "lakebench-")
	if err != nil {
		return nil, err
	}
	l := &localLake{dataDir: dataDir, tenant: tenant,
		apiAddr: "127.0.0.1:" + strconv.Itoa(freePort()), flightAddr: "127.0.0.1:" + strconv.Itoa(freePort())}
	l.proc, err = procs.start(nil, lakeBin, "local", "--no-demo", "--data-dir", dataDir, "--api-listen", l.apiAddr, "--flight-listen", l.flightAddr, "--http-listen", "-",
		// Not measured here, and their default ports are shared with
		// whatever else runs lake on this machine (CI runs the tests
		// alongside).
		"--iceberg-listen", "-", "--browser-listen", "-")
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, err
	}
	if err := waitTCP(l.proc, l.apiAddr, 60*time.Second); err != nil {
		l.stop()
		return nil, err
	}
	secret, err := os.ReadFile(filepath.Join(dataDir, "dev-secret"))
	if err != nil {
		l.stop()
		return nil, err
	}
	l.token, err = auth.IssueHS256(bytes.TrimSpace(secret), auth.TokenClaims{Tenant: tenant, TTL: 2 * time.Hour, Now: time.Now()})
	if err != nil {
		l.stop()
		return nil, err
	}
	return l, nil
}

func (l *localLake) stop() {
	if l.proc != nil {
		l.proc.Stop()
	}
	os.RemoveAll(l.dataDir)
}

// post sends a POST with the token and local mode's request guard.
func (l *localLake) post(path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest("POST", "http://"+l.apiAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("X-Lake-Request", "1") // local mode's guard
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(resp.Body)
	return resp.StatusCode, msg, err
}

// register registers tables in namespace main of the tenant through the
// registration API (8 at a time), then asks for a refresh, so discovery
// lists them all.
func (l *localLake) register(tables []namedSchema) error {
	var g errgroup.Group
	g.SetLimit(8)
	for _, t := range tables {
		g.Go(func() error {
			body, err := json.Marshal(map[string]any{"name": t.name, "location": "/bench/" + t.name, "schema": base64.StdEncoding.EncodeToString(t.ipc)})
			if err != nil {
				return err
			}
			code, msg, err := l.post("/v1/tenants/"+l.tenant+"/namespaces/main/tables", body)
			if err != nil {
				return err
			}
			if code != http.StatusCreated {
				return fmt.Errorf("register %s: %d %s", t.name, code, msg)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	code, msg, err := l.post("/v1/refresh", nil)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("refresh: %d %s", code, msg)
	}
	return err
}

// client is a Flight SQL client of lake's discovery, and the context that
// carries the tenant's token.
func (l *localLake) client() (*flightsql.Client, context.Context, error) {
	c, err := flightsql.NewClient(l.flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		return nil, nil, err
	}
	return c, metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+l.token), nil
}
