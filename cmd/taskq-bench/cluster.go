package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/task"
)

// runCluster is the cluster mode: it starts a private single node with
// -cluster-replicas replicas (each cluster master feeds as many) and,
// unless -redis names a cluster, a private cluster of -cluster-masters
// masters with -cluster-replicas replicas each, measures both side by side
// (benchScale), prints the table and stops every server it started.
func runCluster(ctx context.Context, cfg *config, log *slog.Logger, out io.Writer) error {
	began := time.Now()
	var sv servers
	defer sv.stop()
	singleURL, clusterURL := "", ""
	switch {
	case cfg.redisSet && redisstore.IsClusterURL(cfg.redisURL):
		clusterURL = cfg.redisURL
	case cfg.redisSet:
		singleURL = cfg.redisURL
	}
	var err error
	if singleURL == "" {
		if singleURL, err = sv.startSingle(ctx, cfg.clusterReplicas); err != nil {
			return err
		}
	}
	if clusterURL == "" {
		if clusterURL, err = sv.startCluster(ctx, cfg.clusterMasters, cfg.clusterReplicas); err != nil {
			return err
		}
	}
	if cfg.clusterPoolSize > 0 && !strings.Contains(clusterURL, "pool_size=") {
		sep := "?"
		if strings.Contains(clusterURL, "?") {
			sep = "&"
		}
		clusterURL += sep + "pool_size=" + strconv.Itoa(cfg.clusterPoolSize)
	}
	single, err := openBackend(ctx, "single", singleURL, 1)
	if err != nil {
		return err
	}
	defer single.close()
	cluster, err := openBackend(ctx, "cluster", clusterURL, cfg.clusterPartitions)
	if err != nil {
		return err
	}
	defer cluster.close()
	e := &env{cfg: cfg, log: log, out: out, ns: newNamespace(), procs: runtime.GOMAXPROCS(0)}
	if e.noop, err = task.New[benchInput, benchResult]("bench-noop", task.Options{
		Idempotency: task.Status(`input.id`, time.Hour),
	}); err != nil {
		return err
	}
	e.printf("taskq-bench -cluster: single node %s, cluster %s (%d masters, %d nodes), ready in %s; GOMAXPROCS %d, %d CPUs, load average %s\n",
		singleURL, clusterURL, cluster.masters, len(cluster.nodes), time.Since(began).Round(10*time.Millisecond), e.procs, runtime.NumCPU(), loadAverage())
	e.printf("Figures are read from each server's INFO cpu and commandstats: the cores are shared, so wall-clock rates say little.\n")
	rep := &report{}
	if err := benchScale(ctx, e, rep, []*backend{single, cluster}); err != nil {
		return err
	}
	e.printf("\n")
	rep.print(out)
	e.printf("\ntotal %s, load average %s\n", time.Since(began).Round(100*time.Millisecond), loadAverage())
	return nil
}
