package worker

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/taskq/taskq/internal/engine"
)

// value is a counter's or a gauge's value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// series counts the series a collector has.
func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	return len(ch)
}

// Each task's series count its own runs, each outcome in its own counter,
// however many goroutines count at once (the series are looked up once
// and shared).
func TestWorkerMetricsCountEachTaskAndOutcomeApart(t *testing.T) {
	m := newWorkerMetrics()
	outcomes := []engine.Outcome{engine.OutcomeSucceeded, engine.OutcomeFailed, engine.OutcomeRetry, engine.OutcomeWait}
	const goroutines, rounds = 8, 48 // rounds a multiple of the outcomes
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := []string{"a", "b"}[g%2]
			for i := range rounds {
				o := outcomes[i%len(outcomes)]
				m.runStarted(task)
				m.handlerReturned(task, string(o), 0.001)
				m.recorded(task, o)
				m.recorded(task, "skipped") // not an outcome Redis holds: no counter
			}
		}()
	}
	wg.Wait()
	perTask := float64(goroutines / 2 * rounds)
	perOutcome := perTask / float64(len(outcomes))
	for _, task := range []string{"a", "b"} {
		if got := value(t, m.started.WithLabelValues(task)); got != perTask {
			t.Errorf("%s started = %v, want %v", task, got, perTask)
		}
		if got := value(t, m.inFlight.WithLabelValues(task)); got != 0 {
			t.Errorf("%s in flight = %v, want 0", task, got)
		}
		for name, c := range map[string]float64{
			"succeeded": value(t, m.succeeded.WithLabelValues(task)),
			"failed":    value(t, m.failed.WithLabelValues(task)),
			"retried":   value(t, m.retried.WithLabelValues(task)),
			"waited":    value(t, m.waited.WithLabelValues(task)),
		} {
			if c != perOutcome {
				t.Errorf("%s %s = %v, want %v", task, name, c, perOutcome)
			}
		}
	}
	// One duration series per task and outcome, each with its runs.
	if n := series(m.duration); n != 2*len(outcomes) {
		t.Errorf("duration series = %d, want %d", n, 2*len(outcomes))
	}
	if n := series(m.succeeded); n != 2 {
		t.Errorf("succeeded series = %d, want 2", n)
	}
}

// BenchmarkWorkerMetricsPerRun is what one run costs the worker's metrics
// (started, handler returned, outcome recorded): through the series looked
// up once (cached), and through a label lookup for each (lookup), which is
// what they cost before; from as many goroutines as GOMAXPROCS, as a
// worker's handlers count.
func BenchmarkWorkerMetricsPerRun(b *testing.B) {
	b.Run("cached", func(b *testing.B) {
		m := newWorkerMetrics()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.runStarted("task")
				m.handlerReturned("task", "succeeded", 0.001)
				m.recorded("task", engine.OutcomeSucceeded)
			}
		})
	})
	b.Run("lookup", func(b *testing.B) {
		m := newWorkerMetrics()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.started.WithLabelValues("task").Inc()
				m.inFlight.WithLabelValues("task").Inc()
				m.inFlight.WithLabelValues("task").Dec()
				m.duration.WithLabelValues("task", "succeeded").Observe(0.001)
				m.succeeded.WithLabelValues("task").Inc()
			}
		})
	})
}
