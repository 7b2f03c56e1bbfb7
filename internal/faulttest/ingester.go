package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// IngesterRoleEnv makes a process an ingester: it holds the IngesterConfig
// as JSON.
const IngesterRoleEnv = "TASKQ_FAULT_INGESTER"

// IngesterConfig configures an ingester process: it pushes one event with
// its fan-out in steps, one trigger per call, and kills itself (SIGKILL) at
// the point KillStep and KillTriggered name, as an ingester that crashes
// there would.
type IngesterConfig struct {
	RedisURL  string
	Namespace string
	Key       string
	Payload   json.RawMessage
	// KillStep is the step after which the process dies: FanoutStored
	// (the event is stored, no task triggered) or FanoutTriggered (once
	// KillTriggered tasks have been triggered). 0 lets the push finish.
	KillStep      engine.FanoutStep
	KillTriggered int
}

// RunIngester pushes the event cfg describes, printing "killing <event
// id>" just before it kills the process, or "pushed <event id>" once the
// push has finished.
func RunIngester(ctx context.Context, cfg IngesterConfig, out io.Writer) error {
	rdb, err := Dial(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	c, err := client.New(client.Options{Redis: rdb, Namespace: cfg.Namespace, Logger: workerLog(WorkerConfig{}),
		OperationTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	redisstore.StoreOf(clientlink.Store(c)).SetFanoutHooks(&engine.FanoutHooks{
		Steps: true, TriggersPerCall: 1,
		After: func(step engine.FanoutStep, eventID string, triggered int) error {
			if step == cfg.KillStep && triggered == cfg.KillTriggered {
				fmt.Fprintf(out, "killing %s\n", eventID)
				killSelf()
			}
			return nil
		},
	})
	ing, err := events.New(c, events.Options{Logger: workerLog(WorkerConfig{}), RefreshInterval: -1})
	if err != nil {
		return err
	}
	ev, err := ing.Push(ctx, cfg.Key, cfg.Payload, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pushed %s\n", ev.ID)
	return nil
}

// killSelf ends the process with SIGKILL before the calling goroutine
// takes another step (see stopSelf): nothing after the call reaches Redis.
func killSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGKILL)
}

// StartIngester starts exe (with args, e.g. "-test.run=^$" for a test
// binary) as an ingester process configured by cfg. Its stderr goes to
// stderr.
func StartIngester(exe string, args []string, name string, cfg IngesterConfig, stderr io.Writer) (*Proc, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return startProc(exe, args, name, IngesterRoleEnv+"="+string(raw), stderr)
}

// runIngesterRole runs the ingester process configured by raw and exits.
func runIngesterRole(raw string) {
	var cfg IngesterConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "faulttest ingester:", err)
		os.Exit(2)
	}
	if err := RunIngester(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "faulttest ingester:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
