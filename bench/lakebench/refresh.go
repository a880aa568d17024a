package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// ---- 3. refresh over dynalite ----

type dynalite struct{ endpoint string }

func startDynalite(procs *procSet) (*dynalite, error) {
	bin := "tools/npm/node_modules/.bin/dynalite"
	port := freePort()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := procs.start(nil, bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--createTableMs", "0")
	if err != nil {
		return nil, err
	}
	return &dynalite{endpoint: "http://" + addr}, waitTCP(p, addr, 30*time.Second)
}

func (d *dynalite) client() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(d.endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}, dynamo.RetryOptions(dynamo.RetryPolicy{}))
}

func benchRefresh(c config, r *report, d *dynalite) error {
	r.printf("## 3. Refresh: one paginated, strongly consistent scan of dynalite → snapshot → blob\n\n")
	r.printf("| registrations | segments | pages | time s | items/s | peak heap MB | blob MB |\n|---|---|---|---|---|---|---|\n")
	ctx := context.Background()
	for _, n := range c.refreshSizes {
		table := fmt.Sprintf("bench-%d", n)
		if err := dynamo.CreateTable(ctx, d.client(), table); err != nil {
			return err
		}
		seedStore, _ := dynamo.New(d.client(), dynamo.Options{Table: table})
		cat := catalog.New(seedStore, catalog.Options{Quota: catalog.Quota{MaxTables: -1, MaxBytes: -1}})
		var g errgroup.Group
		g.SetLimit(16)
		for i := range n {
			g.Go(func() error {
				ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%03d", i%200), Namespace: "ns", Name: fmt.Sprintf("t%06d", i)}
				_, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for _, segments := range []int{1, 4} {
			store, _ := dynamo.New(d.client(), dynamo.Options{Table: table, Segments: segments})
			dir, _ := os.MkdirTemp("", "lakebench-refresh-")
			p := &refresh.Publisher{Store: store, Blobs: blobstore.NewFile(filepath.Join(dir, "catalog.lakesnap"))}
			var res refresh.Result
			t0 := time.Now()
			var err error
			peak := testenv.PeakHeap(func() { res, err = p.Run(ctx) })
			el := time.Since(t0)
			os.RemoveAll(dir)
			if err != nil {
				return err
			}
			if res.Counts.Tables != n {
				return fmt.Errorf("refresh saw %d tables, want %d", res.Counts.Tables, n)
			}
			r.printf("| %d | %d | %d | %.2f | %.0f | %.0f | %.2f |\n", n, segments, res.Scan.Pages, el.Seconds(), float64(n)/el.Seconds(), float64(peak)/(1<<20), float64(res.BlobBytes)/1e6)
		}
	}
	r.printf("\n")
	return nil
}
