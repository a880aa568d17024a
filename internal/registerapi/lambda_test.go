package registerapi_test

import (
	"testing"

	"github.com/lake-catalog/lake/internal/registerapi"
)

func TestLambdaConfigFromEnv(t *testing.T) {
	got, err := registerapi.LambdaConfigFromEnv(func(k string) string { return map[string]string{"LAKE_TABLE": "registrations"}[k] })
	if err != nil || got.Table != "registrations" {
		t.Fatalf("got %+v, %v; want table registrations", got, err)
	}
	if _, err := registerapi.LambdaConfigFromEnv(func(string) string { return "" }); err == nil {
		t.Fatal("no LAKE_TABLE: got no error")
	}
}
