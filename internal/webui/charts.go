package webui

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// Charts: the run statistics (Inspector.RunStats) drawn as SVG on the
// server, so the page needs no script and no other origin (the CSP allows
// neither): line charts with labelled axes, a title and a description a
// screen reader announces, and the series named in a legend.

// chartSeries is one line of a chart.
type chartSeries struct {
	Name   string
	Class  string // the CSS class that colours it (s1, s2, s3)
	Values []float64
}

// chart is one drawn chart.
type chart struct {
	Title string
	SVG   template.HTML
}

// chartSet is the charts of one window.
type chartSet struct {
	Window string // "last hour", "last day"
	Total  client.RunStatsPoint
	Charts []chart
}

// statsCharts is what the overview and a task's page show of the
// statistics: the last hour and the last day.
type statsCharts struct {
	Task string
	Sets []chartSet
}

// readCharts reads the statistics of task ("" for every task) over the
// last hour and day and draws them.
func (u *UI) readCharts(ctx context.Context, task string) (*statsCharts, error) {
	out := &statsCharts{Task: task}
	for _, w := range []struct {
		name   string
		window time.Duration
	}{{"Last hour", time.Hour}, {"Last day", 24 * time.Hour}} {
		st, err := u.in.RunStats(ctx, task, w.window)
		if err != nil {
			return nil, err
		}
		out.Sets = append(out.Sets, drawStats(st, w.name))
	}
	return out, nil
}

// drawStats draws one window's four charts: throughput, failures,
// queue wait and run time.
func drawStats(st *client.RunStats, window string) chartSet {
	n := len(st.Points)
	series := func(f func(p client.RunStatsPoint) float64) []float64 {
		v := make([]float64, n)
		for i, p := range st.Points {
			v[i] = f(p)
		}
		return v
	}
	per := "per minute"
	scale := 1.0
	if st.Step > time.Minute {
		// A day's points are ten minutes long: shown per minute too.
		scale = float64(time.Minute) / float64(st.Step)
	}
	rate := func(f func(p client.RunStatsPoint) int64) []float64 {
		return series(func(p client.RunStatsPoint) float64 { return float64(f(p)) * scale })
	}
	ms := func(f func(p client.RunStatsPoint) time.Duration) []float64 {
		return series(func(p client.RunStatsPoint) float64 { return float64(f(p)) / float64(time.Millisecond) })
	}
	times := make([]time.Time, n)
	for i, p := range st.Points {
		times[i] = p.Time
	}
	who := "all tasks"
	if st.Task != "" {
		who = "task " + st.Task
	}
	set := chartSet{Window: window, Total: st.Total}
	add := func(title, unit string, ss ...chartSeries) {
		full := fmt.Sprintf("%s, %s, %s", title, who, strings.ToLower(window))
		set.Charts = append(set.Charts, chart{Title: title, SVG: lineChart(full, unit, times, ss)})
	}
	add("Throughput", "runs "+per,
		chartSeries{"started", "s1", rate(func(p client.RunStatsPoint) int64 { return p.Started })},
		chartSeries{"ended", "s2", rate(func(p client.RunStatsPoint) int64 { return p.Ended })})
	add("Failures, retries and duplicates", "runs "+per,
		chartSeries{"failed", "s3", rate(func(p client.RunStatsPoint) int64 { return p.Failed })},
		chartSeries{"retried", "s2", rate(func(p client.RunStatsPoint) int64 { return p.Retried })},
		chartSeries{"duplicates", "s1", rate(func(p client.RunStatsPoint) int64 { return p.Duplicates })})
	add("Queue wait", "ms",
		chartSeries{"p50", "s1", ms(func(p client.RunStatsPoint) time.Duration { return p.WaitP50 })},
		chartSeries{"p95", "s2", ms(func(p client.RunStatsPoint) time.Duration { return p.WaitP95 })},
		chartSeries{"p99", "s3", ms(func(p client.RunStatsPoint) time.Duration { return p.WaitP99 })})
	add("Run time", "ms",
		chartSeries{"p50", "s1", ms(func(p client.RunStatsPoint) time.Duration { return p.RunP50 })},
		chartSeries{"p95", "s2", ms(func(p client.RunStatsPoint) time.Duration { return p.RunP95 })},
		chartSeries{"p99", "s3", ms(func(p client.RunStatsPoint) time.Duration { return p.RunP99 })})
	return set
}

// The drawing area of a chart, in SVG units (the SVG scales to its box).
const (
	chartW, chartH           = 360.0, 170.0
	chartLeft, chartRight    = 46.0, 8.0
	chartTop, chartBottom    = 18.0, 22.0
	chartTicksY, chartTicksX = 4, 4
)

// lineChart draws series over times as an accessible SVG line chart:
// role img, a title and a description naming the latest and largest
// values, a y axis in unit from 0 to a round maximum, and times on the x
// axis (UTC).
func lineChart(title, unit string, times []time.Time, ss []chartSeries) template.HTML {
	top := 0.0
	for _, s := range ss {
		for _, v := range s.Values {
			top = math.Max(top, v)
		}
	}
	top = niceMax(top)
	n := len(times)
	x := func(i int) float64 {
		if n < 2 {
			return chartLeft
		}
		return chartLeft + (chartW-chartLeft-chartRight)*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return chartTop + (chartH-chartTop-chartBottom)*(1-v/top) }
	var b strings.Builder
	esc := template.HTMLEscapeString
	var desc []string
	for _, s := range ss {
		last, peak := 0.0, 0.0
		if len(s.Values) > 0 {
			last = s.Values[len(s.Values)-1]
		}
		for _, v := range s.Values {
			peak = math.Max(peak, v)
		}
		desc = append(desc, fmt.Sprintf("%s: latest %s, highest %s", s.Name, num(last), num(peak)))
	}
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-labelledby="%[3]s-t %[3]s-d" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, chartID(title))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%[1]s-d">%s (%s)</desc>`, chartID(title), esc(title), esc(strings.Join(desc, "; ")), esc(unit))
	// y axis: grid lines and labels.
	for i := 0; i <= chartTicksY; i++ {
		v := top * float64(i) / chartTicksY
		fmt.Fprintf(&b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/>`, chartLeft, chartW-chartRight, y(v), y(v))
		fmt.Fprintf(&b, `<text class="axis" x="%g" y="%.1f" text-anchor="end">%s</text>`, chartLeft-4, y(v)+3, num(v))
	}
	fmt.Fprintf(&b, `<text class="axis unit" x="2" y="10">%s</text>`, esc(unit))
	// x axis: times.
	for i := 0; i <= chartTicksX && n > 0; i++ {
		j := (n - 1) * i / chartTicksX
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case chartTicksX:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%g" text-anchor="%s">%s</text>`, x(j), chartH-6, anchor, times[j].UTC().Format("15:04"))
	}
	for _, s := range ss {
		var pts []string
		for i, v := range s.Values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
		}
		fmt.Fprintf(&b, `<polyline class="line %s" points="%s"><title>%s</title></polyline>`, s.Class, strings.Join(pts, " "), esc(s.Name))
	}
	b.WriteString(`</svg>`)
	// The legend, as HTML beside the SVG.
	b.WriteString(`<ul class="legend">`)
	for _, s := range ss {
		fmt.Fprintf(&b, `<li><span class="key %s"></span>%s</li>`, s.Class, esc(s.Name))
	}
	b.WriteString(`</ul>`)
	return template.HTML(b.String()) //nolint:gosec // every value is a number or escaped above
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// num formats a chart value: whole numbers plainly, others with up to two
// decimals.
func num(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// chartID makes an element ID from a chart's title.
func chartID(title string) string {
	var b strings.Builder
	b.WriteString("chart-")
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}
