package catalog_test

import (
	"testing"

	"github.com/lake-catalog/lake/internal/testenv"
)

// The tests on DynamoDB share one dynalite server (testenv.SharedDynamoDB),
// each in a table of its own, which testenv.Main stops after the last test.
func TestMain(m *testing.M) { testenv.Main(m, nil) }
