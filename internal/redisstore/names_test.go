package redisstore_test

import (
	"testing"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// The store takes a task's strategy and a trigger's conflict policy as
// they are: one type each, defined in package task, so that nothing
// converts between look-alike string types. The scripts read the values
// below; StrategyNone is the one the store adds, for runs without a key.
func TestStrategyAndPolicyAreTheTasks(t *testing.T) {
	def := task.Idempotency{Strategy: task.StrategyDebounce}
	p := engine.EnqueueParams{Strategy: def.Strategy, Policy: task.ConflictSupersede}
	if p.Strategy != engine.StrategyDebounce || p.Policy != engine.PolicySupersede {
		t.Fatalf("params = %q/%q, want debounce/supersede", p.Strategy, p.Policy)
	}
	for got, want := range map[string]string{
		string(engine.StrategyNone): "none", string(engine.StrategyTTL): "ttl",
		string(engine.StrategyStatus): "status", string(engine.StrategyDebounce): "debounce",
		string(engine.PolicyReject): "reject", string(engine.PolicyAttach): "attach",
		string(engine.PolicySupersede): "supersede", string(engine.PolicySignal): "signal",
	} {
		if got != want {
			t.Errorf("script value %q, want %q", got, want)
		}
	}
}
