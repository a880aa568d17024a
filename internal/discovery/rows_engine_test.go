package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// blockingAssumer stands in for STS and answers nothing until released.
type blockingAssumer struct {
	entered chan struct{}
	release chan struct{}
}

func (a *blockingAssumer) AssumeRole(ctx context.Context, in vending.AssumeInput) (vending.Credentials, error) {
	a.entered <- struct{}{}
	select {
	case <-a.release:
	case <-ctx.Done():
		return vending.Credentials{}, ctx.Err()
	}
	return vending.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token", Expiration: time.Now().Add(in.Duration)}, nil
}

// A statement reading a table's rows runs on the tenant's rows engine: the
// tenant's catalog statements are answered while it waits on its I/O
// (here, STS held still), never queued behind it.
func TestCatalogStatementsDoNotWaitForRows(t *testing.T) {
	t.Parallel()
	a := &blockingAssumer{entered: make(chan struct{}, 1), release: make(chan struct{})}
	v, err := vending.New(a, vending.NewGuard(nil), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/reader"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, discovery.Options{Door: &vending.Door{Vendor: v, Region: "us-east-1"}})
	e.registerSpec("acme", "sales", "orders", catalog.TableSpec{Location: "s3://tenant-data/acme/sales/orders/", Schema: ordersSchema})
	if _, err := e.cat.UpdateTenantSettings(context.Background(), "acme", "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = []string{"s3://tenant-data/acme/"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	ctx := as(t, "acme")
	done := make(chan error, 1)
	go func() {
		_, err := statement(e, ctx, "SELECT * FROM sales.orders LIMIT 1")
		done <- err
	}()
	select {
	case <-a.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the statement over sales.orders never asked for credentials")
	}
	// The rows statement is inside its engine now, held at STS.
	got, err := statement(e, ctx, "SELECT table_name FROM information_schema.tables")
	select {
	case <-done:
		t.Fatal("the rows statement ended before it was released")
	default:
	}
	close(a.release)
	if err != nil || got != "table_name|orders" {
		t.Fatalf("catalog statement while rows are read: %q, %v", got, err)
	}
	<-done // it fails to read the files (there is no S3 here); only its end matters
}

// Reads run RowsOptions.Reads at a time in the whole process: with one, a
// second tenant's read waits for the first to end, then runs.
func TestRowsReadsTakeTurns(t *testing.T) {
	t.Parallel()
	a := &blockingAssumer{entered: make(chan struct{}, 2), release: make(chan struct{})}
	v, err := vending.New(a, vending.NewGuard(nil), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/reader"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, discovery.Options{Door: &vending.Door{Vendor: v, Region: "us-east-1"}, Rows: discovery.RowsOptions{Reads: 1}})
	for _, tenant := range []string{"acme", "globex"} {
		e.registerSpec(tenant, "sales", "orders", catalog.TableSpec{Location: "s3://tenant-data/" + tenant + "/sales/orders/", Schema: ordersSchema})
		if _, err := e.cat.UpdateTenantSettings(context.Background(), tenant, "ops", func(s *catalog.TenantSettings) error {
			s.AllowedPrefixes = []string{"s3://tenant-data/" + tenant + "/"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.publish()
	done := make(chan string, 2)
	run := func(tenant string) {
		_, _ = statement(e, as(t, tenant), "SELECT * FROM sales.orders LIMIT 1")
		done <- tenant
	}
	go run("acme")
	<-a.entered // acme's read holds the one turn, held at STS
	go run("globex")
	// globex's statement is waiting for the turn: it cannot have reached
	// STS. Another tenant's catalog statement is answered meanwhile, and
	// then globex still has not.
	if got, err := statement(e, as(t, "globex"), "SELECT count(*) FROM information_schema.tables"); err != nil || got != "count(*)|1" {
		t.Fatalf("catalog statement: %q, %v", got, err)
	}
	select {
	case <-a.entered:
		t.Fatal("globex's read reached STS while acme's held the only turn")
	default:
	}
	close(a.release) // acme's read goes on (and fails: no S3 here), then globex's runs
	if first := <-done; first != "acme" {
		t.Fatalf("%s ended first", first)
	}
	<-a.entered
	<-done
}
