package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// row is one line of the final table.
type row struct {
	scenario string
	variant  string
	figure   string
	// ratio compares the figure with the scenario's reference ("" if none).
	ratio  string
	target string
	// verdict is "ok", "MISS" or "" when there is no target.
	verdict string
}

// report collects the rows of every scenario.
type report struct {
	rows []row
	// triggerRate is taskq's trigger throughput with the default
	// configuration (batched), the reference of the end-to-end target;
	// triggerUnbatched is the same with batching off.
	triggerRate, triggerUnbatched float64
}

func (r *report) add(x row) { r.rows = append(r.rows, x) }

func (r *report) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVARIANT\tFIGURE\tRATIO\tTARGET\t")
	fmt.Fprintln(tw, "--------\t-------\t------\t-----\t------\t")
	for _, x := range r.rows {
		target := x.target
		if x.verdict != "" {
			target += " " + x.verdict
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", x.scenario, x.variant, x.figure, x.ratio, strings.TrimSpace(target))
	}
	_ = tw.Flush()
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISS"
}

// rate formats a per-second rate with thousands separators.
func rate(v float64) string { return group(int64(v+0.5)) + "/s" }

func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + group(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// quantile returns the q-quantile (0..1) of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// meter prints the progress of a long measurement once a second.
type meter struct {
	done  atomic.Int64
	stopc chan struct{}
	ended chan struct{}
}

func startMeter(e *env, label string, total int64) *meter {
	m := &meter{stopc: make(chan struct{}), ended: make(chan struct{})}
	began := time.Now()
	go func() {
		defer close(m.ended)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-m.stopc:
				return
			case <-t.C:
				d := m.done.Load()
				e.printf("    %s: %s/%s (%s)\n", label, group(d), group(total), rate(float64(d)/time.Since(began).Seconds()))
			}
		}
	}()
	return m
}

func (m *meter) stop() { close(m.stopc); <-m.ended }
