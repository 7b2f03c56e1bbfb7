package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// placed is a run of a tenant in a region: a group of each of two limits.
type placed struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Region string `json:"region"`
	Block  bool   `json:"block,omitempty"`
}

// gauge counts the handlers running per group, as the handlers see it,
// and the most it counted for each.
type gauge struct {
	mu   sync.Mutex
	now  map[string]int
	most map[string]int
}

func newGauge() *gauge { return &gauge{now: map[string]int{}, most: map[string]int{}} }

func (g *gauge) enter(groups ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range groups {
		g.now[k]++
		g.most[k] = max(g.most[k], g.now[k])
	}
}

func (g *gauge) leave(groups ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range groups {
		g.now[k]--
	}
}

// holdUntil waits until group counts n running, or for d at most: a
// handler that holds its slots so makes the busiest moment one that
// happens whatever the machine's speed, where a fixed sleep needs the
// admissions to land within it.
func (g *gauge) holdUntil(group string, n int, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
		g.mu.Lock()
		full := g.now[group] >= n
		g.mu.Unlock()
		if full {
			return
		}
	}
}

// highest is the most any group whose name starts with prefix counted.
func (g *gauge) highest(prefix string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	hi := 0
	for k, n := range g.most {
		if strings.HasPrefix(k, prefix) {
			hi = max(hi, n)
		}
	}
	return hi
}

// A run of two limits, tenant (MaxRuns 2) and region (MaxRuns 3), starts
// only when both admit it: two workers of 16 handlers each, with their own
// connections, run 300 runs of 4 tenants spread over 3 regions, so that
// each limit is the one that binds somewhere; the handlers count
// themselves and never see more than 2 of a tenant or 3 of a region, and
// see exactly those at the busiest (each handler holds its slots until its
// region is full, or 50 ms); every run runs once.
func TestSeveralConcurrencyLimitsAreEachHeld(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		const runs, tenants, regions, perTenant, perRegion = 300, 4, 3, 2, 3
		ctx := context.Background()
		tk := task.Must[placed, out]("conc-two", task.Options{
			Concurrency: []task.Concurrency{
				{Expression: `"tenant:" + input.tenant`, MaxRuns: perTenant},
				{Expression: `"region:" + input.region`, MaxRuns: perRegion},
			},
		})
		g := newGauge()
		var (
			mu  sync.Mutex
			ran = map[string]int{}
		)
		for i := range 2 {
			wb := *b
			wb.Client = b.NewClient(t)
			startWorker(t, &wb, worker.Options{Name: fmt.Sprintf("w%d", i), Concurrency: 16}, func(w *worker.Worker) {
				worker.Handle(w, tk, func(ctx worker.Context, x placed) (out, error) {
					groups := []string{"tenant:" + x.Tenant, "region:" + x.Region}
					g.enter(groups...)
					g.holdUntil(groups[1], perRegion, 50*time.Millisecond)
					g.leave(groups...)
					mu.Lock()
					ran[x.ID]++
					mu.Unlock()
					return out{ID: x.ID}, nil
				})
			})
		}
		c := newClient(t, b)
		inputs := make([]placed, runs)
		for i := range inputs {
			inputs[i] = placed{ID: fmt.Sprint("r", i), Tenant: fmt.Sprint(i % tenants), Region: fmt.Sprint((i / tenants) % regions)}
		}
		refs, err := client.RunMany(ctx, c, tk, inputs)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		for _, ref := range refs {
			if _, err := ref.Wait(wctx); err != nil {
				t.Fatalf("run %s: %v", ref.ID(), err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != runs {
			t.Fatalf("%d runs ran, want %d", len(ran), runs)
		}
		for id, n := range ran {
			if n != 1 {
				t.Fatalf("run %s ran %d times", id, n)
			}
		}
		if hi, hr := g.highest("tenant:"), g.highest("region:"); hi != perTenant || hr != perRegion {
			t.Fatalf("most running at once: %d of a tenant, %d of a region; want exactly %d and %d", hi, hr, perTenant, perRegion)
		}
	})
}

// blockingPlaced is a handler of placed runs that blocks while its input
// says so, until release is closed or its own run is ended (end),
// reporting each start and the cause its context ends with.
type blockingPlaced struct {
	started chan string
	causes  sync.Map // run ID -> error
	release chan struct{}
	ends    sync.Map // input ID -> chan struct{}, closed by end
}

func newBlockingPlaced() *blockingPlaced {
	return &blockingPlaced{started: make(chan string, 16), release: make(chan struct{})}
}

// endOf is the channel end closes for the run of input ID id.
func (bl *blockingPlaced) endOf(id string) chan struct{} {
	ch, _ := bl.ends.LoadOrStore(id, make(chan struct{}))
	return ch.(chan struct{})
}

// end lets the run of input ID id return, alone.
func (bl *blockingPlaced) end(id string) { close(bl.endOf(id)) }

func (bl *blockingPlaced) handler(ctx worker.Context, x placed) (out, error) {
	bl.started <- ctx.RunID()
	if x.Block {
		select {
		case <-bl.release:
		case <-bl.endOf(x.ID):
		case <-ctx.Done():
			bl.causes.Store(ctx.RunID(), context.Cause(ctx))
			return out{}, context.Cause(ctx)
		}
	}
	return out{ID: x.ID}, nil
}

func (bl *blockingPlaced) waitStart(t *testing.T, id string) {
	t.Helper()
	select {
	case got := <-bl.started:
		if got != id {
			t.Fatalf("run %s started, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("run %s did not start", id)
	}
}

// GroupRoundRobin with CancelNewest: a run its tenant holds back waits
// holding no slot of its region (another run of that region starts
// meanwhile); a run whose region is full is cancelled by the region's
// rule, though its tenant had room, and gives its tenant's slot back (the
// next run of that tenant starts); the waiting run starts once its
// tenant's run ends.
func TestConcurrencyLimitsWaitAndCancelNewestCombine(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[placed, out]("conc-rr-cn", task.Options{
			Concurrency: []task.Concurrency{
				{Expression: "input.tenant", MaxRuns: 1},
				{Expression: "input.region", MaxRuns: 1, Strategy: task.CancelNewest},
			},
		})
		bl := newBlockingPlaced()
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) { worker.Handle(w, tk, bl.handler) })
		c := newClient(t, b)
		run := func(x placed) *client.RunRef[out] {
			t.Helper()
			ref, err := client.RunNoWait(ctx, c, tk, x)
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
		first := run(placed{ID: "1", Tenant: "acme", Region: "eu", Block: true})
		bl.waitStart(t, first.ID())
		held := run(placed{ID: "2", Tenant: "acme", Region: "us"})
		eventually(t, "the second run to wait for its tenant", func() bool {
			info, err := c.Inspector().GetRun(ctx, held.ID())
			return err == nil && info.Status == client.StatusQueued && strings.Contains(info.Waiting, `concurrency group "acme"`)
		})
		// Region us is free: the waiting run holds none of it.
		other := run(placed{ID: "3", Tenant: "globex", Region: "us", Block: true})
		bl.waitStart(t, other.ID())
		// Region eu is full: cancelled by its rule, its tenant's slot
		// given back at once.
		full := run(placed{ID: "4", Tenant: "initech", Region: "eu"})
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := full.Result(wctx)
		var rc *client.RunError
		if !errors.As(err, &rc) || !errors.Is(err, task.ErrConcurrencyCancelled) || rc.Group != "eu" {
			t.Fatalf("run of a full region: %v, want cancelled by the region's group", err)
		}
		next := run(placed{ID: "5", Tenant: "initech", Region: "asia"})
		bl.waitStart(t, next.ID())
		if info := wait(t, next); info.Status != client.StatusSucceeded {
			t.Fatalf("next run of the cancelled run's tenant: %s", info.Status)
		}
		// Region us ends first: were the tenant's run to end while other
		// still ran, held would find its region full and be cancelled by
		// the region's rule, as full was.
		bl.end("3")
		if info := wait(t, other); info.Status != client.StatusSucceeded {
			t.Fatalf("run %s: %s", other.ID(), info.Status)
		}
		close(bl.release)
		bl.waitStart(t, held.ID())
		for _, ref := range []*client.RunRef[out]{first, held} {
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Fatalf("run %s: %s", ref.ID(), info.Status)
			}
		}
	})
}

// CancelInProgress with GroupRoundRobin: a run admitted by its tenant
// displaces the oldest run of its full region, which is cancelled naming
// the region's group; a run its tenant holds back displaces nobody, as the
// region is asked only once the tenant admitted it.
func TestConcurrencyLimitsCancelInProgressDisplacesOnlyForARunThatStarts(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[placed, out]("conc-cip-rr", task.Options{
			Concurrency: []task.Concurrency{
				{Expression: "input.region", MaxRuns: 1, Strategy: task.CancelInProgress},
				{Expression: "input.tenant", MaxRuns: 1},
			},
		})
		bl := newBlockingPlaced()
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) { worker.Handle(w, tk, bl.handler) })
		c := newClient(t, b)
		run := func(x placed) *client.RunRef[out] {
			t.Helper()
			ref, err := client.RunNoWait(ctx, c, tk, x)
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
		old := run(placed{ID: "1", Tenant: "acme", Region: "eu", Block: true})
		bl.waitStart(t, old.ID())
		// Its tenant holds it back: region eu is not asked, old runs on.
		held := run(placed{ID: "2", Tenant: "acme", Region: "eu"})
		eventually(t, "the run its tenant holds back to wait", func() bool {
			info, err := c.Inspector().GetRun(ctx, held.ID())
			return err == nil && strings.Contains(info.Waiting, `concurrency group "acme"`)
		})
		// Another tenant's run of region eu starts and displaces old: had
		// the held run displaced it, its cancel would name that run.
		newer := run(placed{ID: "3", Tenant: "globex", Region: "eu", Block: true})
		bl.waitStart(t, newer.ID())
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := old.Result(wctx)
		var rc *client.RunError
		if !errors.As(err, &rc) || rc.Group != "eu" || rc.By != newer.ID() {
			t.Fatalf("old run: %v, want displaced in eu by %s", err, newer.ID())
		}
		// Its end frees tenant acme: held starts, displacing newer in eu.
		bl.waitStart(t, held.ID())
		if _, err := newer.Result(wctx); !errors.Is(err, task.ErrConcurrencyCancelled) {
			t.Fatalf("newer run: %v, want displaced by the held run", err)
		}
		if info := wait(t, held); info.Status != client.StatusSucceeded {
			t.Fatalf("held run: %s", info.Status)
		}
		close(bl.release)
	})
}

// export is a run whose rate limit units and limit come from its input.
type export struct {
	ID    string `json:"id"`
	Rows  int    `json:"rows"`
	Quota int    `json:"quota"`
}

// Units and a limit computed from the input: a run taking 3 units of a
// limit of 5 starts, a second of 3 waits (6 would pass 5), one of 2
// starts (5 in all); the limit's log holds the 5 units taken. A trigger
// whose units pass its limit, or whose limit passes the most, is refused
// with a *task.KeyError naming the limit, the expression and the value.
func TestRateLimitUnitsAndLimitFromTheInput(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[export, out]("exports", task.Options{RateLimits: []task.RateLimit{{
			Name: "exports", Period: time.Hour, UnitsExpression: "input.rows", LimitExpression: "input.quota",
		}}})
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x export) (out, error) { return out{ID: x.ID}, nil })
		})
		c := newClient(t, b)
		run := func(x export) *client.RunRef[out] {
			t.Helper()
			ref, err := client.RunNoWait(ctx, c, tk, x)
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
		if info := wait(t, run(export{ID: "a", Rows: 3, Quota: 5})); info.Status != client.StatusSucceeded {
			t.Fatalf("3 of 5: %s", info.Status)
		}
		held := run(export{ID: "b", Rows: 3, Quota: 5})
		eventually(t, "3 more of 5 to wait", func() bool {
			info, err := c.Inspector().GetRun(ctx, held.ID())
			return err == nil && info.Status == client.StatusQueued && info.Waiting == `rate limit "exports"`
		})
		if info := wait(t, run(export{ID: "c", Rows: 2, Quota: 5})); info.Status != client.StatusSucceeded {
			t.Fatalf("2 more of 5: %s", info.Status)
		}
		ls, err := c.Inspector().ListRateLimits(ctx, "")
		if err != nil || len(ls) != 1 || ls[0].Used == nil || *ls[0].Used != 5 || ls[0].LimitExpression != "input.quota" || ls[0].Limit != 0 {
			t.Fatalf("rate limits = %+v, %v; want 5 units used of the limit input.quota", ls, err)
		}
		for _, c2 := range []struct {
			x          export
			kind, expr string
			want       string
		}{
			{export{ID: "d", Rows: 6, Quota: 5}, task.KeyRateLimitUnits, "input.rows", "6 is outside [1, limit 5]"},
			{export{ID: "e", Rows: 1, Quota: task.RateLimitMax + 1}, task.KeyRateLimitLimit, "input.quota", "100001 is outside [1, 100000]"},
		} {
			_, err := client.RunNoWait(ctx, c, tk, c2.x)
			var ke *task.KeyError
			if !errors.As(err, &ke) || ke.Kind != c2.kind || ke.Limit != "exports" || ke.Expression != c2.expr ||
				!errors.Is(err, task.ErrRateLimitValue) || !strings.Contains(err.Error(), c2.want) {
				t.Errorf("trigger %+v: %v; want a *task.KeyError on %s saying %s", c2.x, err, c2.expr, c2.want)
			}
		}
	})
}
