package httpapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskq/taskq/pkg/client"
)

// queueStatsTimeout bounds the Redis reads of one scrape's queue gauges:
// past it the scrape answers without them.
const queueStatsTimeout = 2 * time.Second

// queueCollector reads the queue figures of every registered task at
// scrape time (Inspector.QueueStats).
type queueCollector struct {
	in                    *client.Inspector
	log                   *slog.Logger
	depth, inFlight, aged *prometheus.Desc
	paused                *prometheus.Desc
}

func newQueueCollector(in *client.Inspector, log *slog.Logger) *queueCollector {
	byTask := []string{"task"}
	return &queueCollector{
		in: in, log: log,
		depth: prometheus.NewDesc("taskq_queue_depth",
			"Runs queued and not yet delivered to a worker, by task (all partitions).", byTask, nil),
		inFlight: prometheus.NewDesc("taskq_runs_in_flight",
			"Runs delivered to a worker and not yet finished, by task (all partitions; runs awaiting redelivery included).", byTask, nil),
		aged: prometheus.NewDesc("taskq_oldest_queued_age_seconds",
			"How long the oldest queued run of a task has waited for delivery (0 when none is queued).", byTask, nil),
		paused: prometheus.NewDesc("taskq_task_paused",
			"1 for a paused task (workers start none of its runs), 0 for a registered task that runs.", byTask, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.inFlight
	ch <- c.aged
	ch <- c.paused
}

// Collect implements prometheus.Collector. Without Redis it reports
// nothing, so that /metrics keeps answering.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queueStatsTimeout)
	defer cancel()
	stats, err := c.in.QueueStats(ctx)
	if err != nil {
		c.log.Debug("taskq: cannot read the queue figures for /metrics", "err", err)
		return
	}
	now := time.Now()
	for _, q := range stats {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(q.Queued), q.Task)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(q.InFlight), q.Task)
		ch <- prometheus.MustNewConstMetric(c.aged, prometheus.GaugeValue, oldestQueuedAge(q, now).Seconds(), q.Task)
	}
	paused, err := c.in.PausedTasks(ctx)
	if err != nil {
		c.log.Debug("taskq: cannot read the paused tasks for /metrics", "err", err)
		return
	}
	for _, q := range stats {
		v := 0.0
		if _, ok := paused[q.Task]; ok {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, v, q.Task)
	}
}

// oldestQueuedAge is how long the oldest queued run of q has waited at now
// (0 when none is queued).
func oldestQueuedAge(q client.QueueStat, now time.Time) time.Duration {
	if q.OldestQueued.IsZero() || now.Before(q.OldestQueued) {
		return 0
	}
	return now.Sub(q.OldestQueued)
}
