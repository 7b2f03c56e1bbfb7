package redisstore_test

import (
	"testing"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/task"
)

// The store takes a task's strategy and a trigger's conflict policy as
// they are: one type each, defined in package task, so that nothing
// converts between look-alike string types. The scripts read the values
// below; StrategyNone is the one the store adds, for runs without a key.
func TestStrategyAndPolicyAreTheTasks(t *testing.T) {
	def := task.Idempotency{Strategy: task.StrategyDebounce}
	p := redisstore.EnqueueParams{Strategy: def.Strategy, Policy: task.ConflictSupersede}
	if p.Strategy != redisstore.StrategyDebounce || p.Policy != redisstore.PolicySupersede {
		t.Fatalf("params = %q/%q, want debounce/supersede", p.Strategy, p.Policy)
	}
	for got, want := range map[string]string{
		string(redisstore.StrategyNone): "none", string(redisstore.StrategyTTL): "ttl",
		string(redisstore.StrategyStatus): "status", string(redisstore.StrategyDebounce): "debounce",
		string(redisstore.PolicyReject): "reject", string(redisstore.PolicyAttach): "attach",
		string(redisstore.PolicySupersede): "supersede", string(redisstore.PolicySignal): "signal",
	} {
		if got != want {
			t.Errorf("script value %q, want %q", got, want)
		}
	}
}
