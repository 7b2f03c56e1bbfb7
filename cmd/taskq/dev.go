package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/devtasks"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/worker"
)

// devOptions are the flags of dev.
type devOptions struct {
	addr      string
	token     string
	demoOnly  bool
	noDemo    bool
	delay     time.Duration
	logLevel  string
	logFormat string
}

func (a *app) devCmd() *cobra.Command {
	o := devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a complete taskq on an embedded Redis: HTTP API, example worker and a demo",
		Long: `Start everything taskq needs in one process: an embedded in-memory Redis
(miniredis) unless --redis is given, the HTTP API with a generated token, and a
worker running the two example tasks (process-order, with a status-strategy
key, and handle-webhook, with a ttl key, triggered by webhook.received events).

On start it runs a short demo: an order is triggered, its duplicate is rejected
with the existing run's ID, and the run's result is shown; then a webhook event
is pushed twice and the second is deduplicated; last, an order is scheduled
a second ahead (its key claimed at once, so a duplicate triggered meanwhile
names the scheduled run) and runs when due. It then prints the URL, the
token and ready-to-paste curl and taskq commands to try the same by hand.
With --demo it runs the demo without the HTTP API and exits.

Only --redis selects a real Redis here; $TASKQ_REDIS_URL is ignored so that
the demo never writes to a Redis you did not name. Ctrl-C shuts it down.`,
		Example: `  taskq dev
  go run ./cmd/taskq dev
  taskq dev --demo
  taskq dev --addr 127.0.0.1:9090 --no-demo
  taskq dev --redis redis://127.0.0.1:6379/0 --namespace playground`,
		Args: argNames(nil),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if _, err := parseLevel(o.logLevel); err != nil {
				return err
			}
			if err := checkLogFormat(o.logFormat); err != nil {
				return err
			}
			if o.demoOnly && o.noDemo {
				return usageErrorf("--demo and --no-demo contradict each other")
			}
			if o.delay < 0 {
				return usageErrorf("invalid --delay %s: must not be negative", o.delay)
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			return a.runDev(cmd.Context(), o, !cmd.Flags().Changed("redis"))
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address of the HTTP API (127.0.0.1:0 picks a free port)")
	f.StringVar(&o.token, "token", "", "bearer token of the HTTP API (default: generated)")
	f.BoolVar(&o.demoOnly, "demo", false, "run the demo and exit, without the HTTP API")
	f.BoolVar(&o.noDemo, "no-demo", false, "skip the demo on start")
	f.DurationVar(&o.delay, "delay", time.Second, "how long the example order handler takes (simulated payment latency)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level of the worker and server logs on stderr: debug, info, warn or error")
	logFormatFlag(f, &o.logFormat)
	return cmd
}

// runDev starts the stack, runs the demo and waits for the end of ctx.
// Components stop in the reverse order of their start: the HTTP API first
// so nothing new arrives, then the worker (running handlers finish), then
// the Redis connections, and the embedded Redis last.
func (a *app) runDev(ctx context.Context, o devOptions, embedded bool) error {
	level, _ := parseLevel(o.logLevel)
	log := a.newLog(o.logFormat, level)
	a.log = log
	out := a.stdout
	session := randomHex(2)

	where, redisNote := "your Redis", "(your Redis)"
	if embedded {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return fmt.Errorf("start the embedded Redis: %w", err)
		}
		defer m.Close()
		stopClock := tickClock(m)
		defer stopClock()
		a.redisURL = "redis://" + m.Addr() + "/0"
		a.skipDurability = true // it has no replicas to wait for
		where, redisNote = "an embedded Redis", "(embedded, in memory: gone when dev stops)"
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	// The deferred calls run last-in first-out: connections close before
	// the embedded Redis does.
	defer a.close()

	w, err := worker.New(worker.Options{
		RedisURL: a.redisURL, Namespace: a.namespace, Partitions: a.partitions, Name: "taskq-dev-" + session,
		ShutdownTimeout: 5 * time.Second, Logger: log, AllowEvictingRedis: a.allowEvicting,
	})
	if err != nil {
		return err
	}
	if err := devtasks.Register(w, o.delay); err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			log.Warn("worker shutdown", "err", err)
		}
	}()
	ing, err := events.New(c, events.Options{Logger: log})
	if err != nil {
		return err
	}

	var url, token string
	if !o.demoOnly {
		token = o.token
		if token == "" {
			token = randomHex(16)
		}
		ln, err := listen(o.addr)
		if err != nil {
			return err
		}
		// A short shutdown: a demo's long-polls need not hold Ctrl-C up.
		srv, err := newServer(c, serveOptions{token: token, shutdown: 3 * time.Second}, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		url = "http://" + ln.Addr().String()
		sctx, stopServer := context.WithCancel(ctx)
		done := serveUntil(sctx, srv, ln)
		defer func() {
			stopServer()
			if err := <-done; err != nil {
				log.Warn("HTTP server shutdown", "err", err)
			}
		}()
	}

	fmt.Fprintf(out, "taskq dev: taskq on %s. Ctrl-C stops it.\n\n", where)
	if url != "" {
		fmt.Fprintf(out, "  HTTP API   %s\n", url)
		fmt.Fprintf(out, "  Dashboard  %s/ui/ (sign in with the token)\n", url)
		fmt.Fprintf(out, "  Token      %s\n", token)
	}
	fmt.Fprintf(out, "  Redis      %s %s\n", redactURL(a.redisURL), redisNote)
	fmt.Fprintf(out, "  Namespace  %s\n", a.namespace)
	fmt.Fprintf(out, "  Worker     %s runs %s (status key %s)\n", w.Name(), devtasks.ProcessOrder.Name(), devtasks.ProcessOrder.Definition().Idempotency.Expression)
	fmt.Fprintf(out, "             and %s (ttl key %s, on event %s)\n\n", devtasks.HandleWebhook.Name(), devtasks.HandleWebhook.Definition().Idempotency.Expression, devtasks.EventKey)

	if !o.noDemo {
		d := &demo{out: out, c: c, ing: ing, orderID: "demo-" + session}
		if err := d.run(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: a clean stop
			}
			return fmt.Errorf("demo: %w", err)
		}
		if o.demoOnly {
			fmt.Fprintln(out, "Demo done.")
			return nil
		}
		a.printTryIt(out, url, token, session, embedded, d.runID)
	} else {
		a.printTryIt(out, url, token, session, embedded, "")
	}
	<-ctx.Done()
	fmt.Fprintln(out, "\nStopping...")
	return nil
}

// tickClock moves the embedded Redis's clock with the wall clock: miniredis
// expires keys only when told time has passed, and ttl keys must expire.
func tickClock(m *miniredis.Miniredis) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// demo triggers an order twice and a webhook twice and narrates.
type demo struct {
	out     io.Writer
	c       *client.Client
	ing     *events.Ingester
	orderID string
	runID   string
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func (d *demo) run(ctx context.Context) error {
	d.say("Demo: one order triggered twice, one webhook delivered twice, then an order scheduled ahead and triggered again.\n")
	order := devtasks.Order{OrderID: d.orderID, Amount: 4200, Currency: "EUR"}
	d.say("  1. trigger %s {orderId: %q, amount: %d}", devtasks.ProcessOrder.Name(), order.OrderID, order.Amount)
	ref, err := client.RunNoWait(ctx, d.c, devtasks.ProcessOrder, order)
	if err != nil {
		return err
	}
	d.runID = ref.ID()
	d.say("     accepted: run %s, key %q", ref.ID(), "order:"+d.orderID)

	d.say("  2. trigger the same order again")
	_, err = client.RunNoWait(ctx, d.c, devtasks.ProcessOrder, order)
	var coll *client.IdempotencyCollisionError
	if !errors.As(err, &coll) {
		return fmt.Errorf("the duplicate was not rejected: %w", err)
	}
	var st client.Status
	if owner, err := coll.Owner.Get(ctx); err == nil {
		st = owner.Status
	}
	d.say("     rejected: duplicate of run %s (status %s); nothing was created", coll.ExistingRunID, st)

	d.say("  3. wait for the result of run %s", ref.ID())
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	res, err := ref.Result(wctx)
	cancel()
	if err != nil {
		return err
	}
	d.say("     succeeded: charged %d %s, charge %s", res.Amount, res.Currency, res.ChargeID)

	d.say("  4. trigger the order once more, now that its run has finished")
	_, err = client.RunNoWait(ctx, d.c, devtasks.ProcessOrder, order)
	if !errors.As(err, &coll) {
		return fmt.Errorf("the late duplicate was not rejected: %w", err)
	}
	d.say("     rejected: the status key is retained for %s after the run, so late duplicates still collide",
		formatDuration(devtasks.ProcessOrder.Definition().Idempotency.Retain))

	payload := []byte(fmt.Sprintf(`{"id":"evt_%s","type":"payment.succeeded"}`, d.orderID))
	d.say("  5. push event %s %s twice", devtasks.EventKey, payload)
	for i, label := range []string{"first: ", "second:"} {
		e, err := d.ing.Push(ctx, devtasks.EventKey, payload, []byte("{}"))
		if err != nil {
			return err
		}
		for _, r := range e.Runs {
			switch r.Outcome {
			case "created":
				d.say("     %s event %s created run %s (key %q)", label, e.ID, r.RunID, r.IdempotencyKey)
			case "deduplicated":
				d.say("     %s event %s deduplicated to run %s", label, e.ID, r.RunID)
			default:
				d.say("     %s event %s: %s %s %s", label, e.ID, r.Task, r.Outcome, r.Error)
			}
		}
		if len(e.Runs) == 0 && i == 0 {
			d.say("     %s event %s triggered no task", label, e.ID)
		}
	}

	later := devtasks.Order{OrderID: d.orderID + "-later", Amount: 990, Currency: "EUR"}
	d.say("  6. schedule %s {orderId: %q} to run in 1s", devtasks.ProcessOrder.Name(), later.OrderID)
	sched, err := client.RunNoWait(ctx, d.c, devtasks.ProcessOrder, later, client.RunIn(time.Second))
	if err != nil {
		return err
	}
	d.say("     accepted: run %s, waiting until it is due; its key %q is claimed now", sched.ID(), "order:"+later.OrderID)
	_, err = client.RunNoWait(ctx, d.c, devtasks.ProcessOrder, later)
	if !errors.As(err, &coll) {
		return fmt.Errorf("the duplicate of the scheduled run was not rejected: %w", err)
	}
	d.say("     its duplicate, triggered at once: rejected, duplicate of the scheduled run %s", coll.ExistingRunID)
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	_, err = sched.Result(wctx)
	cancel()
	if err != nil {
		return err
	}
	d.say("     succeeded once it was due")
	d.say("")
	return nil
}

// printTryIt prints ready-to-paste commands that repeat the demo by hand.
func (a *app) printTryIt(out io.Writer, url, token, session string, embedded bool, demoRun string) {
	cli := cliName()
	order1, order2, evt1, evt2 := "1001", "1002", "evt_1001", "evt_1002"
	if !embedded {
		// A shared Redis may remember earlier sessions' demo.
		order1, order2, evt1, evt2 = "1001-"+session, "1002-"+session, "evt_1001-"+session, "evt_1002-"+session
	}
	// The password of a Redis given with --redis is not printed: the line
	// says where it goes.
	exports := "export TASKQ_REDIS_URL=" + shellQuote(redactURL(a.redisURL))
	if a.namespace != "default" {
		exports += " TASKQ_NAMESPACE=" + shellQuote(a.namespace)
	}
	if a.partitions != 0 {
		exports += " TASKQ_PARTITIONS=" + strconv.Itoa(a.partitions)
	}
	if token != "" {
		exports += " TASKQ_TOKEN=" + token
	}
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	p("Try it yourself, in another terminal:\n")
	if _, _, hasPassword := passwordSpan(a.redisURL); hasPassword {
		p("  # put your Redis password in place of xxxxx")
	}
	p("  %s\n", exports)
	if cli != "taskq" {
		// go run answers 1 for any failure, hiding taskq's exit codes.
		p("  # build the CLI once: go run would hide its exit codes")
		p("  go build -o %s ./cmd/taskq\n", cli)
	}
	if url != "" {
		auth := `-H "Authorization: Bearer $TASKQ_TOKEN"`
		trigger := fmt.Sprintf("curl -sS -X POST %s/api/v1/tasks/%s/runs \\\n    %s -H 'Content-Type: application/json' \\\n    -d '{\"input\":{\"orderId\":\"%s\",\"amount\":4200}}'",
			url, devtasks.ProcessOrder.Name(), auth, order1)
		p("  # trigger an order: 201 Created and its runId")
		p("  %s\n", trigger)
		p("  # the same request again: 409 idempotency_collision with the first run's existingRunId")
		p("  %s\n", trigger)
		run := "<runId>"
		if demoRun != "" {
			run = demoRun
		}
		p("  # a run's result (here the demo's run; paste another runId to see yours)")
		p("  curl -sS %s '%s/api/v1/runs/%s/result?wait=30s'\n", auth, url, run)
		p("  # a webhook delivered twice: the second event is deduplicated to the first run")
		p("  curl -sS -X POST %s/api/v1/events \\\n    %s -H 'Content-Type: application/json' \\\n    -d '{\"key\":\"%s\",\"payload\":{\"id\":\"%s\",\"type\":\"payment.succeeded\"}}'\n",
			url, auth, devtasks.EventKey, evt1)
	}
	p("  # the same with the CLI: the second trigger is a duplicate (exit code 4)")
	for i := 0; i < 2; i++ {
		p("  %s runs trigger %s --input '{\"orderId\":\"%s\",\"amount\":990}'", cli, devtasks.ProcessOrder.Name(), order2)
	}
	p("\n  # a webhook pushed twice: the second event is deduplicated to the first run")
	for i := 0; i < 2; i++ {
		p("  %s events push %s --data '{\"id\":\"%s\",\"type\":\"payment.succeeded\"}'", cli, devtasks.EventKey, evt2)
	}
	p("\n  # what is held, what ran, what is registered")
	p("  %s keys ls", cli)
	p("  %s runs ls", cli)
	p("  %s tasks ls", cli)
	p("\nPress Ctrl-C to stop.")
}

// cliName is how the printed commands invoke the CLI: "taskq" when this
// binary is installed, or bin/taskq to build first when it runs under go
// run, whose exit code (1 for any failure) would hide taskq's.
func cliName() string {
	exe, err := os.Executable()
	if err == nil && strings.Contains(exe, "go-build") {
		return "bin/taskq"
	}
	return "taskq"
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@=%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
