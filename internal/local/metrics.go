package local

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// sideWriteParts are the parts a side write can be (every part but the
// registration, which is always a mutation's primary write).
var sideWriteParts = []catalog.Part{catalog.PartVersion, catalog.PartTombstone, catalog.PartUsage, catalog.PartChanges}

// CatalogCollector exposes the counts of cat's mutations (catalog.Stats)
// to Prometheus, read at each scrape; local mode adds it to /metrics,
// beside discovery's:
//
//	lake_catalog_commits_total                     mutations stored (register, update, drop, undrop, purge)
//	lake_catalog_side_writes_failed_total{part}    writes that went with a stored mutation and failed
//
// part is "version record", "tombstone", "usage item" or "change
// counter", each reported from 0, so an alert on its increase sees the
// first failure. Such a write is answered as stored and logged
// (`register api: stored, but a side write failed`).
func CatalogCollector(cat *catalog.Catalog) prometheus.Collector { return catalogCollector{cat} }

type catalogCollector struct{ cat *catalog.Catalog }

var (
	commitsDesc = prometheus.NewDesc("lake_catalog_commits_total",
		"Catalog mutations stored (register, update, drop, undrop, purge).", nil, nil)
	sideWritesDesc = prometheus.NewDesc("lake_catalog_side_writes_failed_total",
		"Writes that went with a stored catalog mutation and failed (a version record, a tombstone's clean-up, the usage item, the change counter), by part: the mutation is answered as stored and the registration API logs a warning.",
		[]string{"part"}, nil)
)

func (c catalogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- commitsDesc
	ch <- sideWritesDesc
}

func (c catalogCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.cat.Stats()
	ch <- prometheus.MustNewConstMetric(commitsDesc, prometheus.CounterValue, float64(s.Commits))
	for _, p := range sideWriteParts {
		ch <- prometheus.MustNewConstMetric(sideWritesDesc, prometheus.CounterValue, float64(s.FailedByPart[p]), string(p))
	}
}
