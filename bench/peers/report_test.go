package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 1, 1}, 1},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestGroupAndRatio(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -20000: "-20,000"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
	if got := ratioString(30, 20); got != "1.50×" {
		t.Errorf("ratioString(30, 20) = %q, want 1.50×", got)
	}
	if got := ratioString(30, 0); got != "-" {
		t.Errorf("ratioString(30, 0) = %q, want -", got)
	}
}

func TestDriveMakesEveryCallOnce(t *testing.T) {
	const n = 1000
	var seen [n]atomic.Int32
	err := drive(context.Background(), n, 50, func(_ context.Context, i int) error {
		seen[i].Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("call %d made %d times", i, c)
		}
	}
}

func TestDriveStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	err := drive(context.Background(), 100000, 4, func(_ context.Context, i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("drive returned %v, want the call's error", err)
	}
	if c := calls.Load(); c >= 100000 {
		t.Fatalf("%d calls made after the error, want the callers stopped", c)
	}
}

func TestFlagsRefuseFewerThanThreeRounds(t *testing.T) {
	if _, err := parseFlags([]string{"-rounds", "2"}, nil); err == nil {
		t.Fatal("-rounds 2 accepted")
	}
	cfg, err := parseFlags([]string{"-n", "30000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.warmup != 3000 || cfg.rounds != 3 || cfg.callers != 50 || cfg.slots != 50 {
		t.Fatalf("defaults: %+v", cfg)
	}
}
