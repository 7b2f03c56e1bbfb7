package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// benchTrigger measures trigger throughput (dup false: every key is new)
// or duplicate rejection (dup true: every key is already held), taskq
// beside the plain script call (as the store sends it: FCALL, or EVALSHA
// without functions) at the same concurrency. Every variant is set up
// (and its connections dialled) once; then rounds run each variant in turn,
// starting with a different one each round, and the median is reported, so
// that noise from the rest of the machine falls on all of them alike.
func benchTrigger(ctx context.Context, e *env, rep *report, dup bool) error {
	scen, want := "trigger", int64(1)
	if dup {
		scen, want = "dup", 0
	}
	cfg := e.cfg
	e.printf("\n== %s: %d %s from %d concurrent callers, %d rounds (median reported)\n", scen, cfg.n,
		map[bool]string{false: "triggers with unique keys", true: "triggers whose keys are all held"}[dup], cfg.concurrency, cfg.rounds)
	type variant struct {
		name string
		// call makes trigger i with key keys(i).
		call func(keys func(int) string) func(context.Context, int) error
		// drive replaces the cfg.concurrency callers (pipelined reference).
		drive           func(ctx context.Context, label string, keys func(int) string) (time.Duration, error)
		batching, taskq bool
		rates, cpu, own []float64
	}
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	taskqVariant := func(name string, batching bool) (*variant, error) {
		c, rdb, err := e.newClient(batching)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { _ = c.Close(); _ = rdb.Close() })
		return &variant{name: name, taskq: true, batching: batching, call: func(keys func(int) string) func(context.Context, int) error {
			return func(ctx context.Context, i int) error {
				_, err := client.RunNoWait(ctx, c, e.noop, benchInput{ID: keys(i)})
				if dup {
					var coll *client.IdempotencyCollisionError
					if errors.As(err, &coll) {
						return nil
					}
					if err == nil {
						return errors.New("a duplicate was accepted")
					}
				}
				return err
			}
		}}, nil
	}
	baselineVariant := func(name string, pipelined int) (*variant, error) {
		b, err := newBaseline(ctx, e, want)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { _ = b.rdb.Close() })
		v := &variant{name: name, call: b.call}
		if pipelined > 0 {
			v.drive = func(ctx context.Context, label string, keys func(int) string) (time.Duration, error) {
				return b.pipelined(ctx, label, cfg.n, pipelined, keys)
			}
		}
		return v, nil
	}
	var variants []*variant
	for _, mk := range []func() (*variant, error){
		func() (*variant, error) { return baselineVariant("script", 0) },
		func() (*variant, error) { return taskqVariant("taskq unbatched", false) },
		func() (*variant, error) { return taskqVariant("taskq", true) },
		func() (*variant, error) {
			return baselineVariant(fmt.Sprintf("script pipelined x%d (ref)", cfg.concurrency), cfg.concurrency)
		},
	} {
		v, err := mk()
		if err != nil {
			return err
		}
		if len(cfg.variants) == 0 || slices.Contains(cfg.variants, v.name) {
			variants = append(variants, v)
		}
	}
	if len(variants) == 0 {
		return fmt.Errorf("no variant named %v", cfg.variants)
	}
	keysFor := func(prefix string) func(int) string {
		return func(i int) string { return prefix + strconv.Itoa(i) }
	}
	heldKeys := keysFor("held-")
	if dup {
		b, err := newBaseline(ctx, e, 1)
		if err != nil {
			return err
		}
		_, err = b.pipelined(ctx, "holding keys", cfg.n, 500, heldKeys)
		_ = b.rdb.Close()
		if err != nil {
			return fmt.Errorf("holding keys: %w", err)
		}
	}
	// Warm-up: dial every pool and load every script.
	for vi, v := range variants {
		keys := keysFor(fmt.Sprintf("warm-v%d-", vi))
		if dup {
			keys = heldKeys
		}
		if _, err := drive(ctx, e, "warm-up "+v.name, cfg.concurrency*2, cfg.concurrency, 1, v.call(keys)); err != nil {
			return fmt.Errorf("%s: warm-up: %w", v.name, err)
		}
	}
	if !dup {
		e.cleanup(ctx)
	}
	for r := 0; r < cfg.rounds; r++ {
		var line []string
		for k := range variants {
			vi := (r + k) % len(variants)
			v := variants[vi]
			keys := heldKeys
			if !dup {
				keys = keysFor(fmt.Sprintf("r%d-v%d-", r, vi))
			}
			label := fmt.Sprintf("%s %s round %d/%d", scen, v.name, r+1, cfg.rounds)
			stopProf := func() {}
			if r == 0 {
				stopProf = e.profile(scen + "-" + strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(v.name))
			}
			cpu0, own0 := redisCPU(ctx, e), processCPU()
			var elapsed time.Duration
			var err error
			if v.drive != nil {
				elapsed, err = v.drive(ctx, label, keys)
			} else {
				elapsed, err = drive(ctx, e, label, cfg.n, cfg.concurrency, 1, v.call(keys))
			}
			cpu1, own1 := redisCPU(ctx, e), processCPU()
			stopProf()
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			rt := float64(cfg.n) / elapsed.Seconds()
			v.rates = append(v.rates, rt)
			v.cpu = append(v.cpu, (cpu1-cpu0)/float64(cfg.n)*1e6)
			v.own = append(v.own, (own1-own0)/float64(cfg.n)*1e6)
			line = append(line, fmt.Sprintf("%s %s", v.name, rate(rt)))
			if !dup {
				e.cleanup(ctx)
			}
		}
		e.printf("  round %d/%d: %s\n", r+1, cfg.rounds, strings.Join(line, ", "))
	}
	// Ratios are to the first variant; the targets are to the plain script
	// call.
	base := median(variants[0].rates)
	targets := !dup && variants[0].name == "script"
	var parts []string
	for _, v := range variants {
		m := median(v.rates)
		x := row{scenario: scen, variant: v.name, figure: fmt.Sprintf("%s  cpu/op: redis %.1fµs, Go %.1fµs", rate(m), median(v.cpu), median(v.own)), ratio: ratio(m, base)}
		switch {
		case dup:
		case v.taskq && !v.batching:
			rep.triggerUnbatched = m
			if targets {
				x.target, x.verdict = ">=0.9x", verdict(m >= 0.9*base)
			}
		case v.taskq && v.batching:
			rep.triggerRate = m
			if targets {
				x.target, x.verdict = ">=1.5x", verdict(m >= 1.5*base)
			}
		}
		rep.add(x)
		parts = append(parts, fmt.Sprintf("%s %s (%s)", v.name, rate(m), x.ratio))
	}
	e.printf("%s: %s\n", scen, strings.Join(parts, ", "))
	return nil
}
