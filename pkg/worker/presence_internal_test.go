package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// A record Redis refuses (at maxmemory, say) does not keep the worker from
// starting: the presence keeps trying each heartbeat, and writes it once
// Redis takes it.
func TestPresenceStartsWhenTheRecordIsRefused(t *testing.T) {
	t.Parallel()
	var refuse atomic.Bool
	var written atomic.Int64
	refuse.Store(true)
	st := &fakeStore{beatWorker: func() error {
		if refuse.Load() {
			return errors.New("OOM command not allowed when used memory > 'maxmemory'")
		}
		written.Add(1)
		return nil
	}}
	p := &presence{store: st, opTimeout: time.Second, clock: systemClock{}, log: discard,
		record: engine.WorkerRecord{Name: "w", HeartbeatInterval: 10 * time.Millisecond}}
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("Start with the record refused = %v, want it to start", err)
	}
	defer p.Stop()
	refuse.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for written.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the record was never written once Redis took writes again")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
