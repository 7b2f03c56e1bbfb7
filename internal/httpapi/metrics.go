package httpapi

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/finished"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// Trigger sources, the "source" label.
const (
	sourceHTTP  = "http"
	sourceEvent = "event"
)

// metrics are the server's Prometheus metrics, in a registry of its own so
// that two servers in one process (tests) do not collide.
type metrics struct {
	reg *prometheus.Registry
	// triggersAccepted counts triggers that created a run.
	triggersAccepted *prometheus.CounterVec
	// collisions counts triggers whose key was held, so that no run was
	// created: HTTP 409s, attached or signalled triggers, and events
	// deduplicated or debounced to an existing run.
	collisions *prometheus.CounterVec
	// eventsIngested counts stored events; eventTaskErrors the subscribed
	// tasks whose expression failed on an event.
	eventsIngested  prometheus.Counter
	eventTaskErrors *prometheus.CounterVec
	// runsFinished counts runs of the namespace reaching a terminal status
	// while the server is serving.
	runsFinished *prometheus.CounterVec
	// triggerDuration is the latency of a trigger or push, Redis included.
	triggerDuration *prometheus.HistogramVec
	requests        *prometheus.CounterVec
	// changes counts state-changing requests by the token behind them.
	changes *prometheus.CounterVec
	// openConns counts the connections Serve holds open.
	openConns atomic.Int64
	handler   http.Handler
}

// newMetrics builds the metrics, and registers the extra collectors too
// (the client's gauges of Redis).
func newMetrics(extra ...prometheus.Collector) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		triggersAccepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskq_triggers_accepted_total",
			Help: "Triggers that created a run, by task and source (http or event).",
		}, []string{"task", "source"}),
		collisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskq_idempotency_collisions_total",
			Help: "Triggers that found their idempotency key held and created no run, by task and source.",
		}, []string{"task", "source"}),
		eventsIngested: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskq_events_ingested_total",
			Help: "Events stored.",
		}),
		eventTaskErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskq_event_task_errors_total",
			Help: "Subscribed tasks whose idempotency expression failed on an event, by task.",
		}, []string{"task"}),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskq_runs_finished_total",
			Help: "Runs of the namespace that reached a terminal status while this server was serving, by status.",
		}, []string{"status"}),
		triggerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "taskq_trigger_duration_seconds",
			Help:    "Latency of triggers (http) and event pushes (event), Redis included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"source"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskq_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskq_http_changes_total",
			Help: "State-changing HTTP requests by route pattern, status code and the name of the token behind them (webhook:<source> for a signed webhook).",
		}, []string{"route", "code", "token"}),
	}
	openConns := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "taskq_http_open_connections",
		Help: "Connections the HTTP server holds open (at most its connection limit).",
	}, func() float64 { return float64(m.openConns.Load()) })
	m.reg.MustRegister(m.triggersAccepted, m.collisions, m.eventsIngested, m.eventTaskErrors,
		m.runsFinished, m.triggerDuration, m.requests, m.changes, openConns,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(extra...)
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	for _, st := range []client.Status{client.StatusSucceeded, client.StatusFailed, client.StatusCancelled} {
		m.runsFinished.WithLabelValues(string(st))
	}
	return m
}

// countOpen wraps a listener already held to MaxConnections so that
// openConns counts its connections from inside the limit: a connection is
// counted once accepted and uncounted before its Close frees its place. (An
// http.Server's ConnState hook reports StateClosed only after that Close, so
// the next connection could be counted first and the gauge read one over.)
func (m *metrics) countOpen(ln net.Listener) net.Listener {
	return countedListener{Listener: ln, open: &m.openConns}
}

type countedListener struct {
	net.Listener
	open *atomic.Int64
}

func (l countedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	return &countedConn{Conn: c, open: l.open}, nil
}

type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

func (m *metrics) observeTrigger(source string, start time.Time) {
	m.triggerDuration.WithLabelValues(source).Observe(time.Since(start).Seconds())
}

func (m *metrics) countEvent(ev *client.EventInfo) {
	m.eventsIngested.Inc()
	for _, r := range ev.Runs {
		switch r.Outcome {
		case events.OutcomeCreated:
			m.triggersAccepted.WithLabelValues(r.Task, sourceEvent).Inc()
		case events.OutcomeError:
			m.eventTaskErrors.WithLabelValues(r.Task).Inc()
		default:
			m.collisions.WithLabelValues(r.Task, sourceEvent).Inc()
		}
	}
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s.metrics.handler.ServeHTTP(w, r)
}

// subscribeRuns subscribes to the completion notices of the namespace's
// runs and waits for Redis to confirm, so that no run ending after Serve
// started is missed. Without Redis it logs and carries on: go-redis keeps
// trying to subscribe.
func (s *Server) subscribeRuns(ctx context.Context) *finished.Runs {
	f := finished.Subscribe(ctx, s.c)
	rctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := f.Ready(rctx); err != nil {
		s.log.Warn("taskq: cannot subscribe to run completions yet; taskq_runs_finished_total may miss runs", "err", err)
	}
	return f
}

// watchRuns counts runs reaching a terminal status from their completion
// notices until ctx ends. Notices published while the connection is down
// are not counted.
func (s *Server) watchRuns(ctx context.Context, f *finished.Runs) {
	defer f.Close()
	ch := f.C()
	for {
		select {
		case <-ctx.Done():
			return
		case counts, ok := <-ch:
			if !ok {
				return
			}
			for status, n := range counts {
				s.metrics.runsFinished.WithLabelValues(status).Add(float64(n))
			}
		}
	}
}
