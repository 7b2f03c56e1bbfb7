package engine

import (
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

func TestDurabilityDefaults(t *testing.T) {
	if Durable(task.Durability{}) || Durable(task.Durability{Timeout: time.Second}) {
		t.Fatal("a durability without replicas or fsync is durable")
	}
	if !Durable(task.Durability{LocalFsync: true}) {
		t.Fatal("a local fsync alone is not durable")
	}
	if d := WithDefaults(task.Durability{Replicas: 1}); d.Timeout != task.DurabilityTimeoutDefault {
		t.Fatalf("default timeout %s", d.Timeout)
	}
	if d := WithDefaults(task.Durability{Replicas: 1, Timeout: 50 * time.Millisecond}); d.Timeout != 50*time.Millisecond {
		t.Fatalf("a timeout given became %s", d.Timeout)
	}
	if WithDefaults(task.Durability{}).Timeout != 0 {
		t.Fatal("no durability got a timeout")
	}
}
