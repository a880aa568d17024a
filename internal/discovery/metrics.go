package discovery

import (
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/wire"
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
	lastSuccess  prometheus.Gauge
	// degradedTenants and segmentFailures report the tenants whose
	// segment did not load (degraded.go).
	degradedTenants prometheus.Gauge
	segmentFailures *prometheus.CounterVec
	preEncoded      *prometheus.CounterVec
	// cache is the Service's tenant cache, answers its cache of filtered
	// answers, both read at scrape time.
	cache   atomic.Pointer[tenantCache]
	answers atomic.Pointer[answerCache]
	// sql is the Service whose SQL engine cache, results in flight and
	// streams are read at scrape time.
	sql           atomic.Pointer[Service]
	sqlStatements *prometheus.CounterVec
	sqlSeconds    *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lake_discovery_requests_total",
			Help: "Flight requests by command and gRPC status code: each DoGet (by Flight SQL command), each DoAction (by action type: lake.search, lake.describe, lake.list_tables, lake.list_namespaces, Flight SQL's actions, other), and each other call (GetFlightInfo, …) that fails, unauthenticated ones included.",
		}, []string{"command", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lake_discovery_request_seconds", Help: "Time to serve a DoGet or a DoAction (until its last message is handed to gRPC), by command or action type, successes and errors alike.",
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
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lake_discovery_last_successful_poll_timestamp_seconds",
			Help: "When a poll of the snapshot blob last succeeded (a 304 or a load), Unix seconds: alarm on its age.",
		}),
		degradedTenants: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lake_discovery_degraded_tenants",
			Help: "Tenants the serving manifest names whose segment did not load (damaged, missing or unreachable): each serves its last good state or answers UNAVAILABLE, and is fetched again with backoff. Names in /status.",
		}),
		segmentFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lake_discovery_segment_failures_total",
			Help: "Segment loads that failed, by reason: damaged (bytes that do not match the address), missing (no object), unreachable (the store failed).",
		}, []string{"reason"}),
		lastLoadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lake_discovery_snapshot_load_seconds", Help: "How long the last snapshot load (fetch, verify, read the tenant index) took.",
		}),
		preEncoded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lake_discovery_preencoded_responses_total", Help: "DoGet answers sent as the messages encoded when the tenant was prepared, by command.",
		}, []string{"command"}),
	}
	m.sqlStatements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lake_discovery_sql_statements_total",
		Help: "SQL statements by outcome: ok (run), kept (answered from a kept result), invalid, read_only, table_data, limit (past the row or byte cap), timeout (past the statement budget), busy (the results-in-flight budget full), streams (the tenant's streams at their cap), canceled, error.",
	}, []string{"outcome"})
	m.sqlSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lake_discovery_sql_statement_seconds", Help: "Time to run a SQL statement (or find its kept result), by outcome, until its result is ready to stream.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
	}, []string{"outcome"})
	sqlStat := func(f func(*Service) float64) func() float64 {
		return func() float64 {
			if s := m.sql.Load(); s != nil {
				return f(s)
			}
			return 0
		}
	}
	reg.MustRegister(m.sqlStatements, m.sqlSeconds,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_engine_cache_bytes", Help: "Bytes held by the tenants' SQL engines kept in memory.",
		}, sqlStat(func(s *Service) float64 { return float64(s.engines.stats().Bytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_engine_cache_budget_bytes", Help: "The SQL engine cache's budget.",
		}, sqlStat(func(s *Service) float64 { return float64(s.engines.stats().BudgetBytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_engine_cache_engines", Help: "Tenants' SQL engines in the cache.",
		}, sqlStat(func(s *Service) float64 { return float64(s.engines.stats().Engines) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lake_discovery_sql_engine_builds_total", Help: "SQL engines built (a tenant's first statement, after an eviction, or after a change).",
		}, sqlStat(func(s *Service) float64 { return float64(s.engines.stats().Builds) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_result_cache_bytes", Help: "Bytes held by the statements' results kept for their DoGet and repeats.",
		}, sqlStat(func(s *Service) float64 { return float64(s.engines.stats().ResultBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lake_discovery_sql_result_cache_hits_total", Help: "Statements answered from a kept result.",
		}, sqlStat(func(s *Service) float64 { return float64(s.engines.stats().ResultHits) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_inflight_bytes", Help: "Bytes of SQL results in flight (being built or streaming), all tenants.",
		}, sqlStat(func(s *Service) float64 { return float64(s.sqlBudget.Stats().Used) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_inflight_budget_bytes", Help: "The budget of SQL results in flight.",
		}, sqlStat(func(s *Service) float64 { return float64(s.sqlBudget.Total()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_streams", Help: "SQL results streaming, all tenants.",
		}, sqlStat(func(s *Service) float64 { return float64(s.sqlStreams.streaming()) })),
	)
	answerStat := func(f func(AnswerCacheStats) float64) func() float64 {
		return func() float64 {
			if c := m.answers.Load(); c != nil {
				return f(c.Stats())
			}
			return 0
		}
	}
	stat := func(f func(CacheStats) float64) func() float64 {
		return func() float64 {
			if c := m.cache.Load(); c != nil {
				return f(c.Stats())
			}
			return 0
		}
	}
	reg.MustRegister(m.requests, m.latency, m.generation, m.createdAt, m.loads, m.metadataIO, m.tables, m.lastLoadTime, m.lastSuccess, m.preEncoded,
		m.degradedTenants, m.segmentFailures,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_tenant_cache_bytes", Help: "Bytes held by prepared tenants (Arrow buffers and pre-encoded answers).",
		}, stat(func(s CacheStats) float64 { return float64(s.Bytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_tenant_cache_budget_bytes", Help: "The prepared-tenant cache's budget.",
		}, stat(func(s CacheStats) float64 { return float64(s.BudgetBytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_tenant_cache_tenants", Help: "Prepared tenants in the cache.",
		}, stat(func(s CacheStats) float64 { return float64(s.Tenants) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lake_discovery_tenant_builds_total", Help: "Tenants prepared from their compressed segment (first use, after an eviction, or after a change).",
		}, stat(func(s CacheStats) float64 { return float64(s.Builds) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lake_discovery_tenant_cache_hits_total", Help: "Requests served by an already prepared tenant.",
		}, stat(func(s CacheStats) float64 { return float64(s.Hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lake_discovery_tenant_cache_evictions_total", Help: "Prepared tenants evicted to stay within the budget.",
		}, stat(func(s CacheStats) float64 { return float64(s.Evictions) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lake_discovery_answer_cache_hits_total", Help: "Filtered catalog requests (GetTables, GetDbSchemas keeping some rows) answered with the messages encoded for the same request before.",
		}, answerStat(func(s AnswerCacheStats) float64 { return float64(s.Hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "lake_discovery_answer_cache_misses_total", Help: "Filtered catalog requests whose answer was selected and encoded (none kept for the same request to the same state of the tenant).",
		}, answerStat(func(s AnswerCacheStats) float64 { return float64(s.Misses) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_answer_cache_bytes", Help: "Bytes held by the kept answers of filtered catalog requests.",
		}, answerStat(func(s AnswerCacheStats) float64 { return float64(s.Bytes) })),
	)
	return m
}

// observe counts one request; a timed one's (DoGet's or DoAction's)
// duration goes to the histogram.
func (m *Metrics) observe(cmd string, timed bool, start time.Time, err error) {
	m.requests.WithLabelValues(cmd, status.Code(err).String()).Inc()
	if timed {
		m.latency.WithLabelValues(cmd).Observe(time.Since(start).Seconds())
	}
}

// observeSQL counts one SQL statement by outcome and times it. A nil
// Metrics records nothing.
func (m *Metrics) observeSQL(outcome string, start time.Time) {
	if m == nil {
		return
	}
	m.sqlStatements.WithLabelValues(outcome).Inc()
	m.sqlSeconds.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

// actionNames are the action types counted under their own name: lake's
// (package wire) and the Flight and Flight SQL actions the server passes on.
var actionNames = map[string]bool{
	wire.SearchActionType: true, wire.DescribeActionType: true,
	wire.ListTablesActionType: true, wire.ListNamespacesActionType: true, wire.DroppedActionType: true, wire.ChangesActionType: true,
	flightsql.CreatePreparedStatementActionType: true, flightsql.ClosePreparedStatementActionType: true,
	flightsql.CreatePreparedSubstraitPlanActionType: true, flightsql.CancelQueryActionType: true,
	flightsql.BeginTransactionActionType: true, flightsql.EndTransactionActionType: true,
	flightsql.BeginSavepointActionType: true, flightsql.EndSavepointActionType: true,
	flight.CancelFlightInfoActionType: true, flight.RenewFlightEndpointActionType: true,
	flight.SetSessionOptionsActionType: true, flight.GetSessionOptionsActionType: true,
	flight.CloseSessionActionType: true,
}

// actionName is the metrics label of a DoAction's type: the type itself
// when it is one of actionNames, else "other", so a client's made-up types
// cannot grow the label set.
func actionName(typ string) string {
	if actionNames[typ] {
		return typ
	}
	return "other"
}
