package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// benchEndToEnd measures no-op runs processed by workers to a terminal
// status with their keys released: first triggered while the workers run
// (the figure compared with trigger throughput), then a backlog queued
// before the workers start (the workers' own rate). Each round measures
// trigger throughput again, just before and just after its end-to-end
// run, as the trigger scenario does for taskq: the box's speed drifts over
// a run, and the ratio is taken between figures measured side by side.
func benchEndToEnd(ctx context.Context, e *env, rep *report) error {
	cfg := e.cfg
	e.printf("\n== e2e: %d no-op runs (status strategy), %d callers, %d workers x %d slots, %d rounds (median reported)\n",
		cfg.e2eN, cfg.concurrency, cfg.workers, cfg.workerConcurrency, cfg.rounds)
	c, rdb, err := e.newClient(true)
	if err != nil {
		return err
	}
	defer rdb.Close()
	defer c.Close()
	var lives, drains []e2eFigures
	var triggers, ratios []float64
	triggerAlone := func(r int) (float64, error) {
		prefix := fmt.Sprintf("e2e-trigger-r%d-", r)
		elapsed, err := drive(ctx, e, "e2e trigger", cfg.n, cfg.concurrency, 1, func(ctx context.Context, i int) error {
			_, err := client.RunNoWait(ctx, c, e.noop, benchInput{ID: prefix + strconv.Itoa(i)})
			return err
		})
		e.cleanup(ctx)
		return float64(cfg.n) / elapsed.Seconds(), err
	}
	// Each round measures triggers alone just before and just after the
	// end-to-end run, and takes its ratio to their mean: a drift of the
	// box's speed during the round then counts neither for nor against it.
	for r := 0; r < cfg.rounds; r++ {
		before, err := triggerAlone(2 * r)
		if err != nil {
			return err
		}
		live, err := e2eOnce(ctx, e, "e2e", false, r == 0)
		if err != nil {
			return err
		}
		e.cleanup(ctx)
		after, err := triggerAlone(2*r + 1)
		if err != nil {
			return err
		}
		trig := (before + after) / 2
		e.printf("  round %d/%d: triggers alone %s before, %s after; triggered and processed %s = %s of their mean\n",
			r+1, cfg.rounds, rate(before), rate(after), rate(live.rate), ratio(live.rate, trig))
		triggers, ratios = append(triggers, before, after), append(ratios, live.rate/trig)
		drain, err := e2eOnce(ctx, e, "e2e-drain", true, r == 0)
		if err != nil {
			return err
		}
		e.cleanup(ctx)
		lives, drains = append(lives, live), append(drains, drain)
	}
	live, drain := medianFigures(lives), medianFigures(drains)
	trig, within := median(triggers), median(ratios)
	// The e2e ratio is the median of the per-round ratios; the drain's is to
	// the median trigger rate of the same rounds. In brackets: to the
	// trigger scenario's unbatched figure.
	unbatched := func(fig float64) string {
		if rep.triggerUnbatched == 0 {
			return ""
		}
		return " (" + ratio(fig, rep.triggerUnbatched) + " of unbatched)"
	}
	rep.add(row{scenario: "e2e", variant: "trigger alone (same rounds)", figure: rate(trig)})
	x := row{scenario: "e2e", variant: "trigger+process", figure: live.String(),
		ratio:  fmt.Sprintf("%.2fx of trigger, median per round", within) + unbatched(live.rate),
		target: ">=0.5x", verdict: verdict(within >= 0.5)}
	rep.add(x)
	rep.add(row{scenario: "e2e", variant: "drain queued backlog", figure: drain.String(), ratio: ratio(drain.rate, trig) + " of trigger" + unbatched(drain.rate)})
	e.printf("e2e: triggered and processed %s, backlog drained %s\n", rate(live.rate), rate(drain.rate))
	return nil
}

// e2eFigures are what one end-to-end measurement found.
type e2eFigures struct {
	rate float64
	// Server and process CPU per run, and runs per XREADGROUP call.
	redisCPU, goCPU, perRead float64
}

func (f e2eFigures) String() string {
	return fmt.Sprintf("%s  cpu/run: redis %.1fµs, Go %.1fµs; %.1f runs/read", rate(f.rate), f.redisCPU, f.goCPU, f.perRead)
}

// medianFigures is the measurement with the median rate.
func medianFigures(fs []e2eFigures) e2eFigures {
	s := slices.Clone(fs)
	slices.SortFunc(s, func(a, b e2eFigures) int { return cmp.Compare(a.rate, b.rate) })
	return s[len(s)/2]
}

// e2eOnce runs one end-to-end measurement.
func e2eOnce(ctx context.Context, e *env, label string, backlog, profile bool) (e2eFigures, error) {
	cfg := e.cfg
	n := cfg.e2eN
	c, rdb, err := e.newClient(true)
	if err != nil {
		return e2eFigures{}, err
	}
	defer rdb.Close()
	defer c.Close()
	prefix := label + "-"
	trigger := func(ctx context.Context, i int) error {
		_, err := client.RunNoWait(ctx, c, e.noop, benchInput{ID: prefix + strconv.Itoa(i)})
		return err
	}
	stream := e.store().Keys().Stream(e.noop.Name())
	var stopWorkers func()
	if backlog {
		if _, err := drive(ctx, e, label+" queueing", n, cfg.concurrency, 1, trigger); err != nil {
			return e2eFigures{}, err
		}
	}
	defer func() {
		if stopWorkers != nil {
			stopWorkers()
		}
	}()
	stopProf := func() {}
	if profile {
		stopProf = e.profile(label)
	}
	defer stopProf()
	cpu0, own0, reads0 := redisCPU(ctx, e), processCPU(), commandCalls(ctx, e, "xreadgroup")
	began := time.Now()
	stopWorkers, err = e.startWorkers(ctx, cfg.workers, noopHandler)
	if err != nil {
		return e2eFigures{}, err
	}
	produced := make(chan error, 1)
	if backlog {
		produced <- nil
	} else {
		go func() {
			_, err := drive(ctx, e, label+" triggering", n, cfg.concurrency, 1, trigger)
			produced <- err
		}()
	}
	// The run's stream entry is deleted when it reaches a terminal status:
	// once every trigger returned and the stream is empty, all are done.
	producing := true
	lastReport := time.Now()
	for {
		if producing {
			select {
			case err := <-produced:
				if err != nil {
					return e2eFigures{}, err
				}
				producing = false
			default:
			}
		}
		left, err := e.admin.XLen(ctx, stream).Result()
		if err != nil {
			return e2eFigures{}, err
		}
		if !producing && left == 0 {
			break
		}
		if time.Since(lastReport) >= time.Second {
			lastReport = time.Now()
			e.printf("    %s: %s queued or running\n", label, group(left))
		}
		select {
		case <-ctx.Done():
			return e2eFigures{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	elapsed := time.Since(began)
	cpu1, own1, reads1 := redisCPU(ctx, e), processCPU(), commandCalls(ctx, e, "xreadgroup")
	stopProf()
	if err := e.verifyDone(ctx, n); err != nil {
		return e2eFigures{}, fmt.Errorf("%s: %w", label, err)
	}
	f := e2eFigures{
		rate: float64(n) / elapsed.Seconds(), redisCPU: (cpu1 - cpu0) / float64(n) * 1e6, goCPU: (own1 - own0) / float64(n) * 1e6,
		perRead: float64(n) / float64(max(1, reads1-reads0)),
	}
	e.printf("  %-10s %s runs in %s: %s; every run succeeded, every key was released\n", label, group(int64(n)), elapsed.Round(time.Millisecond), f)
	return f, nil
}

// verifyDone checks that the namespace holds n runs, all succeeded, and no
// idempotency key.
func (e *env) verifyDone(ctx context.Context, n int) error {
	held, err := e.keysCount(ctx, "key:*")
	if err != nil {
		return err
	}
	if held != 0 {
		return fmt.Errorf("%d idempotency keys still held", held)
	}
	st := e.store()
	ids, err := e.admin.ZRange(ctx, st.Keys().Runs(), 0, -1).Result()
	if err != nil {
		return err
	}
	if len(ids) != n {
		return fmt.Errorf("%d runs recorded, want %d", len(ids), n)
	}
	pipe := e.admin.Pipeline()
	for _, id := range ids {
		pipe.HGet(ctx, st.Keys().Run(id), "status")
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		return err
	}
	for i, c := range cmds {
		if s, _ := c.(interface{ Val() string }); s == nil || s.Val() != "succeeded" {
			return fmt.Errorf("run %s is not succeeded", ids[i])
		}
	}
	return nil
}
