package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// gate is a send function for tests: it records every batch and, while
// held, blocks each send until released.
type gate struct {
	mu      sync.Mutex
	batches [][]int
	entered chan []int
	release chan struct{}
	active  int
	peak    int
	// fail makes the send report an error for these parameters.
	fail map[int]bool
	// short makes the send return one result fewer than it was given.
	short bool
}

func newGate() *gate {
	return &gate{entered: make(chan []int, 100), release: make(chan struct{})}
}

func (g *gate) send(ctx context.Context, ps []int) ([]int, []error) {
	g.mu.Lock()
	g.batches = append(g.batches, slices.Clone(ps))
	g.active++
	g.peak = max(g.peak, g.active)
	g.mu.Unlock()
	g.entered <- ps
	<-g.release
	g.mu.Lock()
	g.active--
	g.mu.Unlock()
	rs := make([]int, len(ps))
	errs := make([]error, len(ps))
	for i, p := range ps {
		rs[i] = p * 10
		if g.fail[p] {
			errs[i] = fmt.Errorf("call %d failed", p)
		}
	}
	if g.short {
		return rs[:len(rs)-1], errs[:len(errs)-1]
	}
	return rs, errs
}

// open lets every send through from now on.
func (g *gate) open() { close(g.release) }

func newTestBatcher(t *testing.T, opts BatcherOptions, g *gate) *Batcher[int, int] {
	t.Helper()
	b, err := NewBatcher(opts, g.send)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitQueued waits until n calls are queued; a bounded wait, not a timing
// assertion: it only fails if the calls never get queued.
func waitQueued[P, R any](t *testing.T, b *Batcher[P, R], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		q := len(b.queue)
		b.mu.Unlock()
		if q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type result struct {
	p, r int
	err  error
}

func doAll(ctx context.Context, b *Batcher[int, int], ps ...int) chan result {
	out := make(chan result, len(ps))
	for _, p := range ps {
		go func() {
			r, err := b.Do(ctx, p)
			out <- result{p, r, err}
		}()
	}
	return out
}

func TestBatcherCoalescesCallsMadeWhileSending(t *testing.T) {
	g := newGate()
	b := newTestBatcher(t, BatcherOptions{Senders: 1}, g)
	ctx := context.Background()
	first := doAll(ctx, b, 1)
	if got := <-g.entered; !slices.Equal(got, []int{1}) {
		t.Fatalf("first batch = %v, want [1]: a lone call goes out at once", got)
	}
	rest := doAll(ctx, b, 2, 3, 4, 5, 6)
	waitQueued(t, b, 5)
	g.open()
	if got := <-g.entered; len(got) != 5 {
		t.Fatalf("second batch = %v, want the 5 calls queued meanwhile", got)
	}
	for _, ch := range []chan result{first, rest} {
		for range cap(ch) {
			r := <-ch
			if r.err != nil || r.r != r.p*10 {
				t.Fatalf("call %d got %d, %v; want its own result %d", r.p, r.r, r.err, r.p*10)
			}
		}
	}
	if len(g.batches) != 2 {
		t.Fatalf("batches = %v, want 2", g.batches)
	}
}

func TestBatcherSplitsAtMaxBatch(t *testing.T) {
	g := newGate()
	b := newTestBatcher(t, BatcherOptions{Senders: 1, MaxBatch: 2}, g)
	ctx := context.Background()
	out := doAll(ctx, b, 1)
	<-g.entered
	more := doAll(ctx, b, 2, 3, 4, 5, 6)
	waitQueued(t, b, 5)
	g.open()
	for range 1 + 5 {
		select {
		case r := <-out:
			if r.err != nil {
				t.Fatal(r.err)
			}
		case r := <-more:
			if r.err != nil {
				t.Fatal(r.err)
			}
		}
	}
	var sizes []int
	for _, batch := range g.batches {
		sizes = append(sizes, len(batch))
	}
	if !slices.Equal(sizes, []int{1, 2, 2, 1}) {
		t.Fatalf("batch sizes = %v, want [1 2 2 1]", sizes)
	}
}

func TestBatcherBoundsSendersInFlight(t *testing.T) {
	g := newGate()
	b := newTestBatcher(t, BatcherOptions{Senders: 2}, g)
	ctx := context.Background()
	// One call per sender, each held in its send; the rest must queue.
	outs := []chan result{doAll(ctx, b, 1)}
	<-g.entered
	outs = append(outs, doAll(ctx, b, 2))
	<-g.entered
	outs = append(outs, doAll(ctx, b, 3, 4, 5, 6, 7, 8))
	waitQueued(t, b, 6)
	g.open()
	for i, n := range []int{1, 1, 6} {
		for range n {
			if r := <-outs[i]; r.err != nil {
				t.Fatal(r.err)
			}
		}
	}
	if g.peak != 2 {
		t.Fatalf("at most %d batches were in flight at once, want exactly 2", g.peak)
	}
}

func TestBatcherGivesEachCallItsOwnError(t *testing.T) {
	g := newGate()
	g.fail = map[int]bool{2: true}
	b := newTestBatcher(t, BatcherOptions{Senders: 1}, g)
	first := doAll(context.Background(), b, 1)
	<-g.entered
	out := doAll(context.Background(), b, 2, 3)
	waitQueued(t, b, 2)
	g.open()
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	for range 2 {
		r := <-out
		switch {
		case r.p == 2 && r.err == nil:
			t.Fatal("call 2 should have failed")
		case r.p == 3 && (r.err != nil || r.r != 30):
			t.Fatalf("call 3 got %d, %v; another call's error leaked into it", r.r, r.err)
		}
	}
}

func TestBatcherDropsCallsWhoseCallerStoppedWaiting(t *testing.T) {
	g := newGate()
	b := newTestBatcher(t, BatcherOptions{Senders: 1}, g)
	first := doAll(context.Background(), b, 1)
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	gone := doAll(ctx, b, 2)
	waitQueued(t, b, 1)
	cancel()
	if r := <-gone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled call returned %v, want context.Canceled", r.err)
	}
	kept := doAll(context.Background(), b, 3)
	waitQueued(t, b, 2)
	g.open()
	<-first
	if r := <-kept; r.err != nil || r.r != 30 {
		t.Fatalf("call 3 = %d, %v", r.r, r.err)
	}
	for _, batch := range g.batches {
		if slices.Contains(batch, 2) {
			t.Fatalf("the cancelled call was sent: batches %v", g.batches)
		}
	}
	if _, err := b.Do(ctx, 4); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a done context = %v, want context.Canceled", err)
	}
}

// DoWithin returns context.DeadlineExceeded once its bound has passed
// while its call waits behind a batch Redis does not answer, and the call
// is then not sent; a call answered in time gets its own result.
func TestBatcherDoWithinBoundsTheWaitAndDropsTheCall(t *testing.T) {
	g := newGate()
	b := newTestBatcher(t, BatcherOptions{Senders: 1}, g)
	first := doAll(context.Background(), b, 1)
	<-g.entered
	start := time.Now()
	if _, err := b.DoWithin(context.Background(), 2, 30*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DoWithin behind a stuck batch = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("DoWithin gave up after %s, before its bound of 30ms", took)
	}
	g.open()
	<-first
	if r, err := b.DoWithin(context.Background(), 3, time.Minute); err != nil || r != 30 {
		t.Fatalf("DoWithin answered in time = %d, %v; want 30", r, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, batch := range g.batches {
		if slices.Contains(batch, 2) {
			t.Fatalf("the call past its bound was sent: batches %v", g.batches)
		}
	}
}

// Calls whose bounds end in the same tick share one channel, and one timer:
// many waiting calls hold no more ticks than the time they were made in
// spans, and none once the ticks have passed.
func TestBatcherDoWithinSharesTicks(t *testing.T) {
	g := newGate()
	b := newTestBatcher(t, BatcherOptions{Senders: 1}, g)
	first := doAll(context.Background(), b, 0)
	<-g.entered
	const calls, bound = 200, 160 * time.Millisecond // ticks of 10ms
	began := time.Now()
	out := make(chan error, calls)
	for i := 1; i <= calls; i++ {
		go func() {
			_, err := b.DoWithin(context.Background(), i, bound)
			out <- err
		}()
	}
	waitQueued(t, b, calls)
	span := time.Since(began)
	b.ticksMu.Lock()
	held := len(b.ticks)
	b.ticksMu.Unlock()
	if most := int(span/(10*time.Millisecond)) + 2; held > most {
		t.Errorf("%d calls made within %s hold %d ticks, want at most %d", calls, span, held, most)
	}
	for range calls {
		if err := <-out; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a call behind a stuck batch returned %v, want context.DeadlineExceeded", err)
		}
	}
	g.open()
	<-first
	b.ticksMu.Lock()
	defer b.ticksMu.Unlock()
	if len(b.ticks) != 0 {
		t.Errorf("%d ticks left once every bound passed", len(b.ticks))
	}
}

// Go batches its calls with Do's and hands each its own result, once; a
// call whose context has ended is answered at once and never sent.
func TestBatcherGoCallsBackOnce(t *testing.T) {
	g := newGate()
	g.fail = map[int]bool{3: true}
	b := newTestBatcher(t, BatcherOptions{Senders: 1}, g)
	first := doAll(context.Background(), b, 1)
	<-g.entered
	got := make(chan result, 10)
	for _, p := range []int{2, 3} {
		b.Go(context.Background(), p, func(r int, err error) { got <- result{p, r, err} })
	}
	waitQueued(t, b, 2)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	b.Go(done, 4, func(r int, err error) { got <- result{4, r, err} })
	if r := <-got; r.p != 4 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("call with a done context: %+v, want context.Canceled at once", r)
	}
	g.open()
	<-first
	for range 2 {
		switch r := <-got; {
		case r.p == 2 && (r.err != nil || r.r != 20):
			t.Fatalf("call 2 got %d, %v", r.r, r.err)
		case r.p == 3 && r.err == nil:
			t.Fatal("call 3 should have failed")
		}
	}
	if len(g.batches) != 2 || len(g.batches[1]) != 2 {
		t.Fatalf("batches = %v, want [[1] [2 3]]", g.batches)
	}
	select {
	case r := <-got:
		t.Fatalf("a call was answered twice: %+v", r)
	default:
	}
}

func TestBatcherReportsAShortReply(t *testing.T) {
	g := newGate()
	g.short = true
	g.open()
	b := newTestBatcher(t, BatcherOptions{}, g)
	if _, err := b.Do(context.Background(), 1); err == nil {
		t.Fatal("a call the send function returned no result for got no error")
	}
}

func TestBatcherIdleHoldsNoSender(t *testing.T) {
	g := newGate()
	g.open()
	b := newTestBatcher(t, BatcherOptions{}, g)
	out := doAll(context.Background(), b, 1, 2, 3)
	for range 3 {
		<-out
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		n := b.senders
		b.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d senders still running with nothing queued", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNewBatcherValidates(t *testing.T) {
	send := func(context.Context, []int) ([]int, []error) { return nil, nil }
	for _, o := range []BatcherOptions{{MaxBatch: -1}, {Senders: -1}, {Timeout: -time.Second}} {
		if _, err := NewBatcher(o, send); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := NewBatcher[int, int](BatcherOptions{}, nil); err == nil {
		t.Error("a nil send function was accepted")
	}
}

// Calls are recycled once done with (see recycle): under many callers at
// once, some giving up while their calls wait, some called back (Go),
// every call that is answered gets its own result, never that of a call
// whose record it took over.
func TestBatcherRecycledCallsKeepTheirOwnResults(t *testing.T) {
	b, err := NewBatcher(BatcherOptions{Senders: 2, MaxBatch: 16}, func(_ context.Context, ps []int) ([]int, []error) {
		time.Sleep(50 * time.Microsecond) // calls queue up behind a send
		rs := make([]int, len(ps))
		for i, p := range ps {
			rs[i] = p * 10
		}
		return rs, make([]error, len(ps))
	})
	if err != nil {
		t.Fatal(err)
	}
	const callers, calls = 16, 300
	var wg sync.WaitGroup
	errs := make(chan error, callers*calls)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				p := c*calls + i
				switch i % 3 {
				case 0: // a caller that gives up at once, or almost
					ctx, cancel := context.WithCancel(context.Background())
					if i%2 == 0 {
						cancel()
					} else {
						time.AfterFunc(20*time.Microsecond, cancel)
					}
					if r, err := b.Do(ctx, p); err == nil && r != p*10 {
						errs <- fmt.Errorf("call %d got %d", p, r)
					}
					cancel()
				case 1:
					if r, err := b.Do(context.Background(), p); err != nil || r != p*10 {
						errs <- fmt.Errorf("call %d got %d, %v", p, r, err)
					}
				default:
					got := make(chan error, 1)
					b.Go(context.Background(), p, func(r int, err error) {
						if err != nil || r != p*10 {
							got <- fmt.Errorf("call %d called back with %d, %v", p, r, err)
							return
						}
						got <- nil
					})
					if err := <-got; err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
