package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// figureName is the table's first column, by scenario.
func figureName(sc scenario, slots int) string {
	switch sc {
	case scenTrigger:
		return "trigger"
	case scenDuplicate:
		return "duplicate rejection"
	default:
		return fmt.Sprintf("end to end (no-op handler, %d slots)", slots)
	}
}

// cpuName names the redis-server CPU row of a scenario.
func cpuName(sc scenario) string {
	switch sc {
	case scenTrigger:
		return "redis-server CPU per trigger"
	case scenDuplicate:
		return "redis-server CPU per duplicate"
	default:
		return "redis-server CPU per run, end to end"
	}
}

// targets are issue #18's minimum ratios taskq/asynq, by scenario.
var targets = [scenarios]float64{scenTrigger: 1.5, scenDuplicate: 1.5, scenEndToEnd: 4}

// median is the middle of xs (the mean of the two middle ones for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// each maps f over samples.
func each(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// ratioString is taskq/asynq as "1.23×", or "-" when asynq's is 0.
func ratioString(taskq, asynq float64) string {
	if asynq == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", taskq/asynq)
}

// rateString is a rate per second with thousands separators.
func rateString(r float64) string { return group(int(r+0.5)) + "/s" }

// group writes n with commas between thousands.
func group(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func µs(x float64) string { return fmt.Sprintf("%.1f µs", x) }

// roundRatio is the median of the rounds' own ratios taskq/asynq of
// scenario sc: each round's two figures were measured a few seconds apart.
func roundRatio(res *results, sc scenario) float64 {
	as, ts := res.samples[sc][nameAsynq], res.samples[sc][nameTaskq]
	var rs []float64
	for r := range min(len(as), len(ts)) {
		rs = append(rs, ts[r].rate()/as[r].rate())
	}
	return median(rs)
}

// printReport prints the table of medians, the targets and every round's
// figures, as Markdown tables.
func printReport(out io.Writer, cfg *config, res *results) {
	const tq, aq = nameTaskq, nameAsynq
	rates := func(sc scenario, sys string) float64 { return median(each(res.samples[sc][sys], sample.rate)) }
	cpu := func(sc scenario, sys string) float64 { return median(each(res.samples[sc][sys], sample.redisPerOp)) }
	goCPU := func(sc scenario, sys string) float64 { return median(each(res.samples[sc][sys], sample.goPerOp)) }
	fmt.Fprintf(out, "Medians of %d rounds, n = %s, %d callers (ratio: taskq/asynq)\n\n", cfg.rounds, group(cfg.n), cfg.callers)
	fmt.Fprintln(out, "| figure | asynq | taskq | ratio |")
	fmt.Fprintln(out, "|---|---|---|---|")
	for sc := range scenarios {
		a, t := rates(sc, aq), rates(sc, tq)
		fmt.Fprintf(out, "| %s | %s | %s | %s |\n", figureName(sc, cfg.slots), rateString(a), rateString(t), ratioString(t, a))
	}
	drain := func(sys string) float64 { return median(each(res.samples[scenEndToEnd][sys], sample.drainRate)) }
	fmt.Fprintf(out, "| of which: start and drain (consumer start to last run finished) | %s | %s | %s |\n",
		rateString(drain(aq)), rateString(drain(tq)), ratioString(drain(tq), drain(aq)))
	for sc := range scenarios {
		a, t := cpu(sc, aq), cpu(sc, tq)
		fmt.Fprintf(out, "| %s | %s | %s | %s |\n", cpuName(sc), µs(a), µs(t), ratioString(t, a))
	}
	for sc := range scenarios {
		a, t := goCPU(sc, aq), goCPU(sc, tq)
		fmt.Fprintf(out, "| Go CPU per op, %s (this process) | %s | %s | %s |\n", figureName(sc, cfg.slots), µs(a), µs(t), ratioString(t, a))
	}
	fmt.Fprintln(out, "\nIssue #18's targets, on the ratio of the medians (in brackets: the median of the rounds' own ratios):")
	for sc := range scenarios {
		r := rates(sc, tq) / rates(sc, aq)
		v := "met"
		if r < targets[sc] {
			v = "not met"
		}
		fmt.Fprintf(out, "- %s ≥ %.1f×: %.2f× (%.2f×), %s\n", figureName(sc, cfg.slots), targets[sc], r, roundRatio(res, sc), v)
	}
	fmt.Fprintln(out, "\nEvery round (rate; redis-server CPU per op):")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| figure | round | asynq | taskq | ratio |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for sc := range scenarios {
		as, ts := res.samples[sc][aq], res.samples[sc][tq]
		for r := range min(len(as), len(ts)) {
			a, t := as[r], ts[r]
			fmt.Fprintf(out, "| %s | %d | %s; %s | %s; %s | %s |\n", figureName(sc, cfg.slots), r+1,
				rateString(a.rate()), µs(a.redisPerOp()), rateString(t.rate()), µs(t.redisPerOp()), ratioString(t.rate(), a.rate()))
		}
	}
}
