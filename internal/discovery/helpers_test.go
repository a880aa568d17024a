package discovery_test

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

func wide(seed int) *arrow.Schema { return catalogtest.WideSchema(seed, 20) }

func richSchema() *arrow.Schema { return catalogtest.RichSchema() }
