package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
)

// backend is one Redis deployment the cluster mode measures: a single node
// or a Redis Cluster, reached by URL as a user's client and workers reach
// it, and read node by node by the benchmark's own admin clients.
type backend struct {
	name       string
	url        string
	partitions int
	// admin reaches every key as the product does (XLEN of a partition's
	// stream); never timed.
	admin redis.UniversalClient
	// nodes are the servers, masters first, each with an admin client of
	// its own for INFO, SCAN and UNLINK.
	nodes   []*node
	masters int
}

// node is one server of a backend.
type node struct {
	addr   string
	master bool
	// slots are the ranges a master serves, as CLUSTER NODES gives them
	// ("0-5460"); "all" on a single node.
	slots string
	rdb   *redis.Client
}

// openBackend connects to the deployment at url (a redis:// or
// redis+cluster:// URL on the loopback interface) and lists its nodes.
// Partitions 0 on a cluster is one per master, the default of a namespace
// first used there.
func openBackend(ctx context.Context, name, url string, partitions int) (*backend, error) {
	b := &backend{name: name, url: url, partitions: partitions}
	if !redisstore.IsClusterURL(url) {
		o, err := redisstore.ClientOptions(url, 5*time.Second)
		if err != nil {
			return nil, err
		}
		if err := checkLoopback(o); err != nil {
			return nil, err
		}
		b.admin = redis.NewClient(o)
		b.nodes = []*node{{addr: o.Addr, master: true, slots: "all", rdb: redis.NewClient(o)}}
		b.masters = 1
		// Its replicas, when they are on this machine too.
		repl, err := b.nodes[0].rdb.Info(ctx, "replication").Result()
		if err != nil {
			b.close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, addr := range replicaAddrs(repl) {
			if checkLoopback(&redis.Options{Addr: addr}) == nil {
				ro := *o
				ro.Addr = addr
				b.nodes = append(b.nodes, &node{addr: addr, rdb: redis.NewClient(&ro)})
			}
		}
		return b, nil
	}
	co, err := redisstore.ClusterOptions(url, 5*time.Second)
	if err != nil {
		return nil, err
	}
	for _, a := range co.Addrs {
		if err := checkLoopback(&redis.Options{Addr: a}); err != nil {
			return nil, err
		}
	}
	cc := redis.NewClusterClient(co)
	b.admin = cc
	seed := redis.NewClient(&redis.Options{Addr: co.Addrs[0], Username: co.Username, Password: co.Password, TLSConfig: co.TLSConfig})
	defer seed.Close()
	nodes, err := seed.ClusterNodes(ctx).Result()
	if err != nil {
		b.close()
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", name, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || strings.Contains(f[2], "fail") || strings.Contains(f[2], "noaddr") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := &node{addr: addr, master: slices.Contains(strings.Split(f[2], ","), "master"), slots: strings.Join(f[8:], ",")}
		if err := checkLoopback(&redis.Options{Addr: addr}); err != nil {
			b.close()
			return nil, err
		}
		n.rdb = redis.NewClient(&redis.Options{Addr: addr, Username: co.Username, Password: co.Password, TLSConfig: co.TLSConfig})
		b.nodes = append(b.nodes, n)
	}
	slices.SortStableFunc(b.nodes, func(x, y *node) int {
		if x.master != y.master {
			if x.master {
				return -1
			}
			return 1
		}
		return firstSlot(x.slots) - firstSlot(y.slots)
	})
	for _, n := range b.nodes {
		if n.master {
			b.masters++
		}
	}
	if b.masters == 0 {
		b.close()
		return nil, fmt.Errorf("%s: no master in CLUSTER NODES", name)
	}
	if b.partitions == 0 {
		b.partitions = b.masters
	}
	return b, nil
}

// replicaAddrs reads the replicas' addresses from a master's INFO
// replication ("slave0:ip=127.0.0.1,port=6380,state=online,...").
func replicaAddrs(info string) []string {
	var out []string
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "slave") || !strings.Contains(v, "ip=") {
			continue
		}
		var ip, port string
		for _, kv := range strings.Split(v, ",") {
			k, x, _ := strings.Cut(kv, "=")
			switch k {
			case "ip":
				ip = x
			case "port":
				port = x
			}
		}
		if ip != "" && port != "" {
			out = append(out, net.JoinHostPort(ip, port))
		}
	}
	return out
}

func firstSlot(ranges string) int {
	lo, _, _ := strings.Cut(ranges, "-")
	lo, _, _ = strings.Cut(lo, ",")
	n, err := strconv.Atoi(lo)
	if err != nil {
		return 1 << 20
	}
	return n
}

func (b *backend) close() {
	if b.admin != nil {
		_ = b.admin.Close()
	}
	for _, n := range b.nodes {
		_ = n.rdb.Close()
	}
}

// scale is how many times the single node's callers and workers the
// backend gets: its masters with -cluster-per-master, else 1.
func (b *backend) scale(cfg *config) int {
	if cfg.perMaster {
		return b.masters
	}
	return 1
}

// label names the backend with its partition count ("cluster P=24").
func (b *backend) label() string { return fmt.Sprintf("%s P=%d", b.name, b.partitions) }

// nodeStats are one node's counters at one moment.
type nodeStats struct {
	cpu        float64 // used_cpu_user + used_cpu_sys, seconds
	scripts    int64   // FCALL and EVALSHA calls (every taskq script call)
	scriptUsec int64   // µs the server spent in them
	calls      int64   // every command
	clients    int64   // connected_clients
	reads      int64   // XREADGROUP calls
}

// stats reads every node's counters.
func (b *backend) stats(ctx context.Context) ([]nodeStats, error) {
	out := make([]nodeStats, len(b.nodes))
	for i, n := range b.nodes {
		info, err := n.rdb.Info(ctx, "cpu", "commandstats", "clients").Result()
		if err != nil {
			return nil, fmt.Errorf("%s: INFO: %w", n.addr, err)
		}
		out[i] = parseStats(info)
	}
	return out, nil
}

// parseStats reads the counters of one INFO reply.
func parseStats(info string) nodeStats {
	var s nodeStats
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case name == "used_cpu_user" || name == "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		case name == "connected_clients":
			s.clients, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(name, "cmdstat_"):
			calls, usec := statField(v, "calls"), statField(v, "usec")
			s.calls += calls
			switch name {
			case "cmdstat_fcall", "cmdstat_evalsha":
				// Functions on Redis 7, EVALSHA before.
				s.scripts, s.scriptUsec = s.scripts+calls, s.scriptUsec+usec
			case "cmdstat_xreadgroup":
				s.reads = calls
			}
		}
	}
	return s
}

// statField reads one field of a commandstats value
// ("calls=3,usec=10,usec_per_call=3.33,...").
func statField(v, field string) int64 {
	for _, kv := range strings.Split(v, ",") {
		if k, x, ok := strings.Cut(kv, "="); ok && k == field {
			n, _ := strconv.ParseInt(x, 10, 64)
			return n
		}
	}
	return 0
}

// delta is after minus before, node by node.
func delta(before, after []nodeStats) []nodeStats {
	out := make([]nodeStats, len(after))
	for i := range after {
		out[i] = nodeStats{
			cpu: after[i].cpu - before[i].cpu, scripts: after[i].scripts - before[i].scripts,
			scriptUsec: after[i].scriptUsec - before[i].scriptUsec, calls: after[i].calls - before[i].calls,
			clients: after[i].clients - before[i].clients, reads: after[i].reads - before[i].reads,
		}
	}
	return out
}

// streams are the keys of task's stream in every partition of namespace ns.
func (b *backend) streams(ns, task string) []string {
	k := redisstore.NewKeys(ns)
	suffix := strings.TrimPrefix(k.Stream(task), k.Prefix())
	out := make([]string, b.partitions)
	for i := range out {
		out[i] = redisstore.PartitionPrefix(ns, i, b.partitions) + suffix
	}
	return out
}

// queued is how many entries task's streams of namespace ns hold.
func (b *backend) queued(ctx context.Context, ns, task string) (int64, error) {
	pipe := b.admin.Pipeline()
	var cmds []*redis.IntCmd
	for _, s := range b.streams(ns, task) {
		cmds = append(cmds, pipe.XLen(ctx, s))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// partitionsPerMaster counts the partitions of namespace ns each master
// serves, the home partition's master marked: read from CLUSTER KEYSLOT
// and the masters' slot ranges.
func (b *backend) partitionsPerMaster(ctx context.Context, ns string) ([]int, int, error) {
	per := make([]int, b.masters)
	home := 0
	if b.masters == 1 {
		per[0] = b.partitions
		return per, 0, nil
	}
	for i := 0; i < b.partitions; i++ {
		slot, err := b.nodes[0].rdb.ClusterKeySlot(ctx, redisstore.PartitionPrefix(ns, i, b.partitions)+"x").Result()
		if err != nil {
			return nil, 0, err
		}
		m := b.masterOfSlot(int(slot))
		if m < 0 {
			return nil, 0, fmt.Errorf("no master serves slot %d", slot)
		}
		per[m]++
		if i == 0 {
			home = m
		}
	}
	return per, home, nil
}

func (b *backend) masterOfSlot(slot int) int {
	for i, n := range b.nodes[:b.masters] {
		for _, r := range strings.Split(n.slots, ",") {
			if strings.HasPrefix(r, "[") { // a slot being migrated
				continue
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			l, err1 := strconv.Atoi(lo)
			h, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && slot >= l && slot <= h {
				return i
			}
		}
	}
	return -1
}

// deleteNamespace deletes every key of namespace ns (all its partitions)
// on every master, one key per UNLINK: keys of several partitions are in
// several slots.
func (b *backend) deleteNamespace(ctx context.Context, ns string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	pattern := "taskq:{" + ns + "[}#]*"
	for _, n := range b.nodes[:b.masters] {
		var cursor uint64
		for {
			keys, next, err := n.rdb.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return
			}
			if len(keys) > 0 {
				pipe := n.rdb.Pipeline()
				for _, k := range keys {
					pipe.Unlink(ctx, k)
				}
				_, _ = pipe.Exec(ctx)
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
}

// countKeys counts the keys of namespace ns matching what ("key:*") on
// every master.
func (b *backend) countKeys(ctx context.Context, ns, what string) (int, error) {
	total := 0
	for _, n := range b.nodes[:b.masters] {
		var cursor uint64
		for {
			keys, next, err := n.rdb.Scan(ctx, cursor, "taskq:{"+ns+"[}#]*:"+what, 1000).Result()
			if err != nil {
				return 0, err
			}
			total += len(keys)
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return total, nil
}
