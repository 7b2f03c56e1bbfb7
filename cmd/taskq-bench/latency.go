package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/worker"
)

// benchLatency offers triggers at a steady rate (open loop: trigger i is
// due at start + i/rate whether or not earlier ones finished, and its
// latency counts from when it was due) and records how long each took to
// reach its handler and until a waiting caller had its result.
func benchLatency(ctx context.Context, e *env, rep *report) error {
	cfg := e.cfg
	total := int(float64(cfg.rate) * (cfg.warmup + cfg.duration).Seconds())
	skip := int(float64(cfg.rate) * cfg.warmup.Seconds())
	e.printf("\n== latency: %d triggers/s for %s (+%s warm-up), open loop, %d workers x %d slots\n",
		cfg.rate, cfg.duration, cfg.warmup, cfg.workers, cfg.workerConcurrency)

	var mu sync.Mutex
	toStart := make([]time.Duration, 0, total)
	toResult := make([]time.Duration, 0, total)
	toAccept := make([]time.Duration, 0, total)
	record := func(s *[]time.Duration, i int, d time.Duration) {
		if i < skip {
			return
		}
		mu.Lock()
		*s = append(*s, d)
		mu.Unlock()
	}
	c, rdb, err := e.newClient(true)
	if err != nil {
		return err
	}
	defer rdb.Close()
	defer c.Close()
	stopWorkers, err := e.startWorkers(ctx, cfg.workers, func(wc worker.Context, in benchInput) (benchResult, error) {
		d := time.Since(time.Unix(0, in.T))
		i, _ := strconv.Atoi(in.ID[len("lat-"):])
		record(&toStart, i, d)
		return benchResult{}, nil
	})
	if err != nil {
		return err
	}
	defer stopWorkers()

	stopProf := e.profile("latency")
	m := startMeter(e, "latency", int64(total))
	began := time.Now()
	failed, firstErr := paced(ctx, total, cfg.rate, m, func(i int, due time.Time) error {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		ref, err := client.RunNoWait(wctx, c, e.noop, benchInput{ID: "lat-" + strconv.Itoa(i), T: due.UnixNano()})
		if err != nil {
			return err
		}
		record(&toAccept, i, time.Since(due))
		if _, err := ref.Result(wctx); err != nil {
			return err
		}
		record(&toResult, i, time.Since(due))
		return nil
	})
	m.stop()
	stopProf()
	if firstErr != nil {
		return fmt.Errorf("%d triggers failed, first: %w", failed, firstErr)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	achieved := float64(total) / time.Since(began).Seconds()
	for _, s := range [][]time.Duration{toStart, toResult, toAccept} {
		slices.Sort(s)
	}
	line := func(name string, s []time.Duration) string {
		return fmt.Sprintf("p50 %s  p99 %s  p99.9 %s  max %s (n=%d)", ms(quantile(s, 0.5)), ms(quantile(s, 0.99)),
			ms(quantile(s, 0.999)), ms(quantile(s, 1)), len(s))
	}
	p99 := quantile(toStart, 0.99)
	rep.add(row{scenario: "latency", variant: "trigger -> handler start", figure: line("start", toStart),
		target: "p99 <5ms", verdict: verdict(p99 < 5*time.Millisecond)})
	rep.add(row{scenario: "latency", variant: "trigger -> result available", figure: line("result", toResult)})
	rep.add(row{scenario: "latency", variant: "trigger -> accepted (RunNoWait)", figure: line("accept", toAccept)})
	e.printf("latency at %s offered (%s achieved): handler start p50 %s p99 %s p99.9 %s; result p50 %s p99 %s p99.9 %s\n",
		rate(float64(cfg.rate)), rate(achieved), ms(quantile(toStart, 0.5)), ms(p99), ms(quantile(toStart, 0.999)),
		ms(quantile(toResult, 0.5)), ms(quantile(toResult, 0.99)), ms(quantile(toResult, 0.999)))
	return nil
}

// paced calls send(i, due) for i from 0 to total-1, each on a goroutine of
// its own at its due time, rate a second from now (open loop: a slow call
// does not hold up the next), counting each in m, until ctx ends; it waits
// for every call and returns how many failed and the first error.
func paced(ctx context.Context, total, rate int, m *meter, send func(i int, due time.Time) error) (failed int64, first error) {
	var (
		n    atomic.Int64
		once sync.Once
		wg   sync.WaitGroup
	)
	began := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := began.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.done.Add(1)
			if err := send(i, due); err != nil {
				n.Add(1)
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return n.Load(), first
}
