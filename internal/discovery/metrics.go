package discovery

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

// Metrics are discovery's Prometheus metrics. Register them with a registry
// of the caller's; NewMetrics does not touch the global one.
type Metrics struct {
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	generation   prometheus.Gauge
	createdAt    prometheus.Gauge
	loads        *prometheus.CounterVec
	metadataIO   prometheus.Counter
	tables       prometheus.Gauge
	lastLoadTime prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lake_discovery_requests_total", Help: "Flight SQL requests by command and gRPC status code.",
		}, []string{"command", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lake_discovery_request_seconds", Help: "Time to prepare a Flight SQL response, by command.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
		}, []string{"command"}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lake_discovery_snapshot_generation", Help: "Generation of the serving snapshot (0 before the first).",
		}),
		createdAt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lake_discovery_snapshot_created_timestamp_seconds", Help: "When the serving snapshot was built; its age is time() minus this.",
		}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lake_discovery_snapshot_loads_total", Help: "Snapshot polls by result: loaded, unchanged, rejected, error.",
		}, []string{"result"}),
		metadataIO: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lake_discovery_metadata_io_total",
			Help: "Metadata reads (blob fetches and conditional polls). Only the snapshot poller reads; requests never do.",
		}),
		tables: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lake_discovery_snapshot_tables", Help: "Tables in the serving snapshot.",
		}),
		lastLoadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lake_discovery_snapshot_load_seconds", Help: "How long the last snapshot load (fetch, verify, decode, prepare) took.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.generation, m.createdAt, m.loads, m.metadataIO, m.tables, m.lastLoadTime)
	return m
}

func (m *Metrics) observe(cmd string, start time.Time, err error) {
	m.requests.WithLabelValues(cmd, status.Code(err).String()).Inc()
	m.latency.WithLabelValues(cmd).Observe(time.Since(start).Seconds())
}
