package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// A worker given a redis:// URL of one node of a cluster refuses to start,
// naming the redis+cluster:// URL to use.
func TestStartRefusesOneNodeOfACluster(t *testing.T) {
	t.Parallel()
	b := redistest.Cluster(t)
	seeds, _, _ := strings.Cut(strings.TrimPrefix(b.URL, "redis+cluster://"), "/")
	node, _, _ := strings.Cut(seeds, ",")
	w, err := worker.New(worker.Options{RedisURL: "redis://" + node + "/0", Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tk := task.Must[in, out]("cluster-node", task.Options{})
	if err := worker.Handle(w, tk, func(worker.Context, in) (out, error) { return out{}, nil }); err != nil {
		t.Fatal(err)
	}
	err = w.Start(context.Background())
	if !errors.Is(err, client.ErrClusterNode) || !strings.Contains(err.Error(), "redis+cluster://"+node) {
		_ = w.Shutdown(context.Background())
		t.Fatalf("Start with redis:// to cluster node %s: %v; want ErrClusterNode naming redis+cluster://", node, err)
	}
}
