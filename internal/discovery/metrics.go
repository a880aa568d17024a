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
	// cache is the Service's cache, read at scrape time (cacheCollector).
	cache atomic.Pointer[cache]
	// sql is the Service whose SQL results in flight and streams are read
	// at scrape time.
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
		Help: "SQL statements by outcome: ok (run), kept (answered from a kept result), invalid, read_only, table_data, limit (past the row or byte cap), timeout (past the statement budget), busy (the results-in-flight budget full), streams (the tenant's statements in progress at their cap), canceled, error.",
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
	reg.MustRegister(m.sqlStatements, m.sqlSeconds, newCacheCollector(&m.cache),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_inflight_bytes", Help: "Bytes of SQL results in flight (being built or streaming), all tenants.",
		}, sqlStat(func(s *Service) float64 { return float64(s.sqlBudget.Stats().Used) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_inflight_budget_bytes", Help: "The budget of SQL results in flight.",
		}, sqlStat(func(s *Service) float64 { return float64(s.sqlBudget.Total()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lake_discovery_sql_streams", Help: "SQL statements in progress (running, or their results streaming), all tenants.",
		}, sqlStat(func(s *Service) float64 { return float64(s.sqlStreams.streaming()) })),
	)
	reg.MustRegister(m.requests, m.latency, m.generation, m.createdAt, m.loads, m.metadataIO, m.tables, m.lastLoadTime, m.lastSuccess, m.preEncoded,
		m.degradedTenants, m.segmentFailures)
	return m
}

// cacheCollector exports the cache's figures, read once per scrape: the
// lake_discovery_cache_* series, one per kind (label kind: tenant,
// sql_engine, sql_result, answer), and under the names the separate caches
// had before the one cache, the same figures of their kind.
type cacheCollector struct {
	cache  *atomic.Pointer[cache]
	budget *prometheus.Desc
	kinds  []kindSeries
	named  []namedSeries
}

// kindSeries is a series per kind of one of the kinds' figures.
type kindSeries struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(KindStats) float64
}

// namedSeries is one figure under a name of its own.
type namedSeries struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(CacheStats) float64
}

func newCacheCollector(c *atomic.Pointer[cache]) *cacheCollector {
	perKind := func(name, help string, typ prometheus.ValueType, val func(KindStats) float64) kindSeries {
		return kindSeries{prometheus.NewDesc(name, help, []string{"kind"}, nil), typ, val}
	}
	kind := func(k kind) func(CacheStats) KindStats {
		return func(st CacheStats) KindStats { return st.Kinds[k.String()] }
	}
	named := func(name, help string, typ prometheus.ValueType, val func(CacheStats) float64) namedSeries {
		return namedSeries{prometheus.NewDesc(name, help, nil, nil), typ, val}
	}
	tenant, engine, result, answer := kind(kindTenant), kind(kindEngine), kind(kindResult), kind(kindAnswer)
	const budgetHelp = " (the one budget of the cache, which every kind shares: lake_discovery_cache_budget_bytes)."
	return &cacheCollector{
		cache: c,
		budget: prometheus.NewDesc("lake_discovery_cache_budget_bytes",
			"The budget (-cache-bytes) of everything kept that is derived from the tenants' segments, all kinds together.", nil, nil),
		kinds: []kindSeries{
			perKind("lake_discovery_cache_bytes", "Bytes held by the cache's entries, by kind: tenant (prepared tenants: Arrow buffers and pre-encoded answers), sql_engine (SQL engines), sql_result (statements' results kept for their DoGet and repeats), answer (encoded answers of filtered catalog requests).",
				prometheus.GaugeValue, func(s KindStats) float64 { return float64(s.Bytes) }),
			perKind("lake_discovery_cache_entries", "Entries in the cache, by kind.",
				prometheus.GaugeValue, func(s KindStats) float64 { return float64(s.Entries) }),
			perKind("lake_discovery_cache_hits_total", "Requests that found their entry kept (or being built by another request), by kind.",
				prometheus.CounterValue, func(s KindStats) float64 { return float64(s.Hits) }),
			perKind("lake_discovery_cache_misses_total", "Requests that found no entry and built one (tenant, sql_engine: each miss is a build) or made the value to keep it (sql_result, answer), by kind.",
				prometheus.CounterValue, func(s KindStats) float64 { return float64(s.Misses) }),
			perKind("lake_discovery_cache_evictions_total", "Entries evicted to stay within the budget, least recently used of every kind first, by kind.",
				prometheus.CounterValue, func(s KindStats) float64 { return float64(s.Evictions) }),
			perKind("lake_discovery_cache_build_errors_total", "Builds that failed (a segment that does not prepare, an engine that does not build), by kind.",
				prometheus.CounterValue, func(s KindStats) float64 { return float64(s.BuildErrors) }),
		},
		named: []namedSeries{
			named("lake_discovery_tenant_cache_bytes", "Bytes held by prepared tenants (Arrow buffers and pre-encoded answers): lake_discovery_cache_bytes{kind=\"tenant\"}.",
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(tenant(s).Bytes) }),
			named("lake_discovery_tenant_cache_budget_bytes", "The prepared tenants' budget"+budgetHelp,
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(s.BudgetBytes) }),
			named("lake_discovery_tenant_cache_tenants", "Prepared tenants in the cache: lake_discovery_cache_entries{kind=\"tenant\"}.",
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(tenant(s).Entries) }),
			named("lake_discovery_tenant_builds_total", "Tenants prepared from their compressed segment (first use, after an eviction, or after a change): lake_discovery_cache_misses_total{kind=\"tenant\"}.",
				prometheus.CounterValue, func(s CacheStats) float64 { return float64(tenant(s).Misses) }),
			named("lake_discovery_tenant_cache_hits_total", "Requests served by an already prepared tenant: lake_discovery_cache_hits_total{kind=\"tenant\"}.",
				prometheus.CounterValue, func(s CacheStats) float64 { return float64(tenant(s).Hits) }),
			named("lake_discovery_tenant_cache_evictions_total", "Prepared tenants evicted to stay within the budget: lake_discovery_cache_evictions_total{kind=\"tenant\"}.",
				prometheus.CounterValue, func(s CacheStats) float64 { return float64(tenant(s).Evictions) }),
			named("lake_discovery_answer_cache_hits_total", "Filtered catalog requests (GetTables, GetDbSchemas keeping some rows) answered with the messages encoded for the same request before: lake_discovery_cache_hits_total{kind=\"answer\"}.",
				prometheus.CounterValue, func(s CacheStats) float64 { return float64(answer(s).Hits) }),
			named("lake_discovery_answer_cache_misses_total", "Filtered catalog requests whose answer was selected and encoded (none kept for the same request to the same state of the tenant): lake_discovery_cache_misses_total{kind=\"answer\"}.",
				prometheus.CounterValue, func(s CacheStats) float64 { return float64(answer(s).Misses) }),
			named("lake_discovery_answer_cache_bytes", "Bytes held by the kept answers of filtered catalog requests: lake_discovery_cache_bytes{kind=\"answer\"}.",
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(answer(s).Bytes) }),
			named("lake_discovery_sql_engine_cache_bytes", "Bytes held by the tenants' SQL engines kept in memory: lake_discovery_cache_bytes{kind=\"sql_engine\"}.",
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(engine(s).Bytes) }),
			named("lake_discovery_sql_engine_cache_budget_bytes", "The SQL engines' budget"+budgetHelp,
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(s.BudgetBytes) }),
			named("lake_discovery_sql_engine_cache_engines", "Tenants' SQL engines in the cache: lake_discovery_cache_entries{kind=\"sql_engine\"}.",
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(engine(s).Entries) }),
			named("lake_discovery_sql_engine_builds_total", "SQL engines built (a tenant's first statement, after an eviction, or after a change): lake_discovery_cache_misses_total{kind=\"sql_engine\"}.",
				prometheus.CounterValue, func(s CacheStats) float64 { return float64(engine(s).Misses) }),
			named("lake_discovery_sql_result_cache_bytes", "Bytes held by the statements' results kept for their DoGet and repeats: lake_discovery_cache_bytes{kind=\"sql_result\"}.",
				prometheus.GaugeValue, func(s CacheStats) float64 { return float64(result(s).Bytes) }),
			named("lake_discovery_sql_result_cache_hits_total", "Statements answered from a kept result: lake_discovery_cache_hits_total{kind=\"sql_result\"}.",
				prometheus.CounterValue, func(s CacheStats) float64 { return float64(result(s).Hits) }),
		},
	}
}

// Describe implements prometheus.Collector.
func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.budget
	for _, s := range c.kinds {
		ch <- s.desc
	}
	for _, s := range c.named {
		ch <- s.desc
	}
}

// Collect implements prometheus.Collector: every series from one read of
// the cache's figures (zeros before a Service is set).
func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := CacheStats{Kinds: map[string]KindStats{}}
	if cc := c.cache.Load(); cc != nil {
		st = cc.stats()
	}
	ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(st.BudgetBytes))
	for _, s := range c.kinds {
		for k := range numKinds {
			ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.val(st.Kinds[k.String()]), k.String())
		}
	}
	for _, s := range c.named {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.val(st))
	}
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
	wire.CredentialsActionType:                  true,
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
