package worker

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/taskq/taskq/internal/engine"
)

// workerMetrics are the worker's Prometheus metrics of its runs. A nil
// *workerMetrics records nothing (components built without one in tests).
type workerMetrics struct {
	started      *prometheus.CounterVec
	succeeded    *prometheus.CounterVec
	failed       *prometheus.CounterVec
	retried      *prometheus.CounterVec
	waited       *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	inFlight     *prometheus.GaugeVec
	renewals     prometheus.Counter
	redeliveries *prometheus.CounterVec

	// Rate limits: see ratelimit.go.
	rateLimitedRuns *prometheus.CounterVec
	rateLimitWait   *prometheus.CounterVec

	// paused: see pauses.go.
	paused *prometheus.GaugeVec

	// The series a run touches, each looked up in its vector once: a
	// lookup hashes the labels and takes the vector's lock, and a run made
	// five of them. runs holds a task's *runSeries, durations the
	// handler's duration by task and outcome (prometheus.Observer), and
	// counted the counter of an outcome Redis holds by task and outcome
	// (prometheus.Counter).
	runs, durations, counted sync.Map
}

// runSeries are a task's started and in-flight series.
type runSeries struct {
	started  prometheus.Counter
	inFlight prometheus.Gauge
}

// taskOutcome keys a series of one task and outcome.
type taskOutcome struct{ task, outcome string }

func (m *workerMetrics) runSeries(task string) *runSeries {
	if s, ok := m.runs.Load(task); ok {
		return s.(*runSeries)
	}
	s, _ := m.runs.LoadOrStore(task, &runSeries{m.started.WithLabelValues(task), m.inFlight.WithLabelValues(task)})
	return s.(*runSeries)
}

// durationSeries is the handler's duration series of task and outcome.
func (m *workerMetrics) durationSeries(task, outcome string) prometheus.Observer {
	k := taskOutcome{task, outcome}
	if s, ok := m.durations.Load(k); ok {
		return s.(prometheus.Observer)
	}
	s, _ := m.durations.LoadOrStore(k, m.duration.WithLabelValues(task, outcome))
	return s.(prometheus.Observer)
}

// outcomeCounter is the counter of outcome o of task held in Redis, nil for
// an outcome not counted.
func (m *workerMetrics) outcomeCounter(task string, o engine.Outcome) prometheus.Counter {
	k := taskOutcome{task, string(o)}
	if s, ok := m.counted.Load(k); ok {
		return s.(prometheus.Counter)
	}
	var vec *prometheus.CounterVec
	switch o {
	case engine.OutcomeSucceeded:
		vec = m.succeeded
	case engine.OutcomeFailed:
		vec = m.failed
	case engine.OutcomeRetry:
		vec = m.retried
	case engine.OutcomeWait:
		vec = m.waited
	default:
		return nil
	}
	s, _ := m.counted.LoadOrStore(k, vec.WithLabelValues(task))
	return s.(prometheus.Counter)
}

func newWorkerMetrics() *workerMetrics {
	byTask := []string{"task"}
	return &workerMetrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_runs_started_total",
			Help: "Attempts this worker started, by task."}, byTask),
		succeeded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_runs_succeeded_total",
			Help: "Runs that succeeded on this worker, by task."}, byTask),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_runs_failed_total",
			Help: "Runs that failed for good on this worker (no retry left, or not retryable), by task."}, byTask),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_runs_retried_total",
			Help: "Attempts that failed on this worker and were scheduled for a retry, by task."}, byTask),
		waited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_runs_waited_total",
			Help: "Attempts that ended on this worker with the run waiting durably (a sleep, a signal, an event), by task."}, byTask),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "taskq_worker_handler_duration_seconds",
			Help:    "How long handlers ran, by task and outcome (succeeded, failed, retry, wait, abandoned).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"task", "outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "taskq_worker_runs_in_flight",
			Help: "Handlers running now, by task."}, byTask),
		renewals: prometheus.NewCounter(prometheus.CounterOpts{Name: "taskq_worker_lease_renewals_total",
			Help: "Leases this worker's heartbeats renewed."}),
		redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_redeliveries_total",
			Help: "Runs whose lease lapsed on another (or an earlier) worker and that this worker took over, by task."}, byTask),
		rateLimitedRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_rate_limited_total",
			Help: "Deliveries this worker held back because a rate limit refused them, by task and limit."}, []string{"task", "limit"}),
		rateLimitWait: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_worker_rate_limit_wait_seconds_total",
			Help: "Time the runs this worker held back were told to wait for their rate limit, summed, by task and limit."}, []string{"task", "limit"}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "taskq_worker_task_paused",
			Help: "1 for each of this worker's tasks it last read as paused (it starts none of its runs), 0 for the others."}, byTask),
	}
}

func (m *workerMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.started, m.succeeded, m.failed, m.retried, m.waited, m.duration, m.inFlight, m.renewals, m.redeliveries,
		m.rateLimitedRuns, m.rateLimitWait, m.paused}
}

// rateLimited counts a run held back by limit, told to wait for wait.
func (m *workerMetrics) rateLimited(task, limit string, wait time.Duration) {
	if m == nil {
		return
	}
	m.rateLimitedRuns.WithLabelValues(task, limit).Inc()
	m.rateLimitWait.WithLabelValues(task, limit).Add(wait.Seconds())
}

// pausedTasks sets the paused gauge of each of tasks.
func (m *workerMetrics) pausedTasks(tasks []string, paused map[string]time.Time) {
	if m == nil {
		return
	}
	for _, t := range tasks {
		v := 0.0
		if _, ok := paused[t]; ok {
			v = 1
		}
		m.paused.WithLabelValues(t).Set(v)
	}
}

// runStarted counts an attempt whose handler is about to run.
func (m *workerMetrics) runStarted(task string) {
	if m == nil {
		return
	}
	s := m.runSeries(task)
	s.started.Inc()
	s.inFlight.Inc()
}

// handlerReturned records how long the handler ran and what came of it.
func (m *workerMetrics) handlerReturned(task, outcome string, seconds float64) {
	if m == nil {
		return
	}
	m.runSeries(task).inFlight.Dec()
	m.durationSeries(task, outcome).Observe(seconds)
}

// recorded counts an outcome Redis holds.
func (m *workerMetrics) recorded(task string, o engine.Outcome) {
	if m == nil {
		return
	}
	if c := m.outcomeCounter(task, o); c != nil {
		c.Inc()
	}
}

func (m *workerMetrics) leaseRenewed() {
	if m != nil {
		m.renewals.Inc()
	}
}

func (m *workerMetrics) redelivered(task string, n int) {
	if m != nil && n > 0 {
		m.redeliveries.WithLabelValues(task).Add(float64(n))
	}
}

// queueReadTimeout bounds the Redis reads of one scrape's queue depths:
// past it the scrape answers without them.
const queueReadTimeout = 2 * time.Second

// queueCollector reports the queue depth of the worker's own tasks, read
// from Redis at scrape time (nothing is read while nobody scrapes).
type queueCollector struct {
	w     *Worker
	depth *prometheus.Desc
}

func newQueueCollector(w *Worker) *queueCollector {
	return &queueCollector{w: w, depth: prometheus.NewDesc("taskq_worker_queue_depth",
		"Runs of this worker's tasks queued and not yet delivered to any worker, by task (all partitions).",
		[]string{"task"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth }

// Collect implements prometheus.Collector. Without Redis it reports
// nothing, so that /metrics keeps answering.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	defs := c.w.definitions()
	if len(defs) == 0 {
		return
	}
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueReadTimeout)
	defer cancel()
	stats, err := c.w.store.QueueStats(ctx, names)
	if err != nil {
		c.w.log.Debug("taskq: cannot read the queue depths for /metrics", "err", err)
		return
	}
	for _, n := range names {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(stats[n].Queued), n)
	}
}
