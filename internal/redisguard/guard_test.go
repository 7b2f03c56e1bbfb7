package redisguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisguard"
	"github.com/taskq/taskq/internal/redistest"
)

// logBuf collects a logger's lines; the guard logs from its own goroutine.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLog() (*slog.Logger, *logBuf) {
	buf := &logBuf{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func client(t *testing.T, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// eventually polls cond for up to d (a bound, not a timing assertion).
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func gather(t *testing.T, g *redisguard.Guard) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Fprintf(&b, "%s{%s} %g\n", mf.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue())
		}
	}
	return b.String()
}

// The policy is read with CONFIG GET, from INFO memory where CONFIG is
// disabled (as on managed services), and an embedded miniredis, which
// never evicts, is recognised; a server that tells no policy at all is
// reported as such, and one that does not answer is not mistaken for it.
func TestReadNodeOnEachKindOfServer(t *testing.T) {
	ctx := context.Background()
	t.Run("config", func(t *testing.T) {
		srv := redistest.StartServer(t, "--maxmemory", "64mb", "--maxmemory-policy", "noeviction")
		n, err := redisguard.ReadNode(ctx, client(t, srv.Addr()))
		if err != nil || n.Policy != "noeviction" || n.Source != redisguard.SourceConfig || n.MaxMemory != 64<<20 ||
			n.UsedMemory <= 0 || n.Addr != srv.Addr() || n.Evicting() {
			t.Fatalf("ReadNode = %+v, %v", n, err)
		}
	})
	t.Run("info where CONFIG is disabled", func(t *testing.T) {
		srv := redistest.StartServer(t, "--maxmemory-policy", "volatile-lru", "--rename-command", "CONFIG", "")
		n, err := redisguard.ReadNode(ctx, client(t, srv.Addr()))
		if err != nil || n.Policy != "volatile-lru" || n.Source != redisguard.SourceInfo || n.UsedMemory <= 0 || !n.Evicting() {
			t.Fatalf("ReadNode = %+v, %v", n, err)
		}
	})
	t.Run("embedded miniredis", func(t *testing.T) {
		b := redistest.Mini(t)
		n, err := redisguard.ReadNode(ctx, b.Client.(*redis.Client))
		if err != nil || n.Source != redisguard.SourceEmbedded || n.Evicting() {
			t.Fatalf("ReadNode = %+v, %v", n, err)
		}
	})
	t.Run("no policy told", func(t *testing.T) {
		srv := redistest.StartServer(t, "--rename-command", "CONFIG", "", "--rename-command", "INFO", "")
		_, err := redisguard.ReadNode(ctx, client(t, srv.Addr()))
		var pu *redisguard.PolicyUnknownError
		if !errors.As(err, &pu) || !errors.Is(err, redisguard.ErrEvictingPolicy) || pu.Addr != srv.Addr() ||
			!strings.Contains(err.Error(), "--allow-evicting-redis") {
			t.Fatalf("ReadNode = %v; want a *PolicyUnknownError naming %s and the way out", err, srv.Addr())
		}
	})
	t.Run("ACL user without INFO and CONFIG", func(t *testing.T) {
		srv := redistest.StartServer(t)
		if err := client(t, srv.Addr()).Do(ctx, "ACL", "SETUSER", "taskq", "on", ">pw", "~taskq:*", "+@all", "-@dangerous").Err(); err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "taskq", Password: "pw"})
		defer rdb.Close()
		_, err := redisguard.ReadNode(ctx, rdb)
		if !errors.Is(err, redisguard.ErrEvictingPolicy) || !strings.Contains(err.Error(), "NOPERM") || !strings.Contains(err.Error(), "+info") {
			t.Fatalf("ReadNode as a user without INFO = %v; want a *PolicyUnknownError saying how to grant INFO", err)
		}
		if err := client(t, srv.Addr()).Do(ctx, "ACL", "SETUSER", "taskq", "+info").Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := redisguard.ReadNode(ctx, rdb); err != nil || n.Policy != "noeviction" || n.Source != redisguard.SourceInfo {
			t.Fatalf("ReadNode as a user with INFO = %+v, %v", n, err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		srv := redistest.StartServer(t)
		rdb := client(t, srv.Addr())
		if err := rdb.ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
			t.Fatal(err)
		}
		_, err := redisguard.ReadNode(ctx, client(t, srv.Addr()))
		if err == nil || errors.Is(err, redisguard.ErrEvictingPolicy) || !strings.Contains(err.Error(), "NOAUTH") {
			t.Fatalf("ReadNode without the password = %v; want NOAUTH, not a verdict on the policy", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		srv := redistest.StartServer(t)
		srv.Kill()
		_, err := redisguard.ReadNode(ctx, client(t, srv.Addr()))
		if err == nil || errors.Is(err, redisguard.ErrEvictingPolicy) {
			t.Fatalf("ReadNode of a stopped server = %v; want its connection error", err)
		}
	})
}

// An evicting policy is refused at Start with an error naming the policy,
// the server and the fix; accepted with AllowEvicting, it is logged as a
// warning and the accepted-risk metric is set and stays set.
func TestGuardRefusesAnEvictingPolicyUnlessAccepted(t *testing.T) {
	srv := redistest.StartServer(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	rdb := client(t, srv.Addr())
	log, _ := newLog()
	g := redisguard.New(rdb, redisguard.Options{Logger: log})
	err := g.Start(context.Background())
	var ep *redisguard.EvictingPolicyError
	if !errors.As(err, &ep) || ep.Policy != "allkeys-lru" || ep.Addr != srv.Addr() || !errors.Is(err, redisguard.ErrEvictingPolicy) {
		t.Fatalf("Start on allkeys-lru = %v; want an *EvictingPolicyError", err)
	}
	for _, want := range []string{"allkeys-lru", srv.Addr(), "CONFIG SET maxmemory-policy noeviction", "--allow-evicting-redis"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	g.Stop()

	log, buf := newLog()
	g = redisguard.New(rdb, redisguard.Options{AllowEvicting: true, Logger: log})
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start with AllowEvicting = %v", err)
	}
	defer g.Stop()
	if g.Err() != nil {
		t.Fatalf("an accepted risk makes Err %v", g.Err())
	}
	if l := buf.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "allkeys-lru") {
		t.Fatalf("no warning of the accepted risk:\n%s", l)
	}
	m := gather(t, g)
	for _, want := range []string{
		"taskq_redis_eviction_risk_accepted{} 1\n", "taskq_redis_eviction_policy_unsafe{} 1\n",
		"taskq_redis_maxmemory_policy{addr=" + srv.Addr() + ",policy=allkeys-lru,source=config} 1\n",
		"taskq_redis_maxmemory_bytes{addr=" + srv.Addr() + "} 6.7108864e+07\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
	// The risk was taken: the metric stays set once the policy is safe.
	if err := rdb.ConfigSet(context.Background(), "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	g.Check(context.Background())
	if m := gather(t, g); !strings.Contains(m, "taskq_redis_eviction_risk_accepted{} 1\n") ||
		!strings.Contains(m, "taskq_redis_eviction_policy_unsafe{} 0\n") {
		t.Fatalf("after the policy turned safe:\n%s", m)
	}
}

// A policy changed at run time is noticed by the next check: Err turns
// non-nil (readiness), an ERROR log and the unsafe metric say why; set
// back, all three clear.
func TestGuardNoticesAPolicyChangedAtRunTime(t *testing.T) {
	srv := redistest.StartServer(t, "--maxmemory-policy", "noeviction")
	rdb := client(t, srv.Addr())
	log, buf := newLog()
	g := redisguard.New(rdb, redisguard.Options{Logger: log, Interval: 20 * time.Millisecond})
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "volatile-ttl").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the changed policy was not noticed", func() bool { return g.Err() != nil })
	if !errors.Is(g.Err(), redisguard.ErrEvictingPolicy) || !strings.Contains(g.Err().Error(), "volatile-ttl") {
		t.Fatalf("Err = %v", g.Err())
	}
	if l := buf.String(); strings.Count(l, "level=ERROR") != 1 || !strings.Contains(l, "volatile-ttl") {
		t.Fatalf("want one ERROR naming the policy, however many checks found it:\n%s", l)
	}
	if m := gather(t, g); !strings.Contains(m, "taskq_redis_eviction_policy_unsafe{} 1\n") ||
		!strings.Contains(m, "taskq_redis_eviction_risk_accepted{} 0\n") {
		t.Fatalf("metrics:\n%s", m)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the restored policy was not noticed", func() bool { return g.Err() == nil })
	if l := buf.String(); !strings.Contains(l, "noeviction again") {
		t.Fatalf("no notice of the restored policy:\n%s", l)
	}
}

// A Redis that cannot be reached at Start is no error there; once it
// answers, an evicting policy is found and reported.
func TestGuardChecksARedisThatWasDownAtStart(t *testing.T) {
	srv := redistest.StartServer(t, "--maxmemory-policy", "allkeys-random")
	srv.Kill()
	log, buf := newLog()
	g := redisguard.New(client(t, srv.Addr()), redisguard.Options{Logger: log, Timeout: time.Second})
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start with Redis down = %v; want nil (the caller's own calls report it)", err)
	}
	defer g.Stop()
	if st := g.Status(); st.ReachErr == nil || !st.Checked.IsZero() || g.Err() != nil {
		t.Fatalf("status with Redis down = %+v", st)
	}
	srv.Start()
	// Checked again within a few seconds, not the 30s interval.
	eventually(t, 10*time.Second, "the policy of the restarted Redis was not read", func() bool { return g.Err() != nil })
	if l := buf.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "allkeys-random") {
		t.Fatalf("no ERROR naming the policy:\n%s", l)
	}
}

// On a Redis Cluster every master is read, and one evicting master is
// enough to refuse it.
func TestGuardReadsEveryMasterOfACluster(t *testing.T) {
	var addrs []string
	var srvs []*redistest.Server
	for i := 0; i < 3; i++ {
		s := redistest.StartServer(t, "--cluster-enabled", "yes", "--appendonly", "no")
		srvs = append(srvs, s)
		addrs = append(addrs, s.Addr())
	}
	ctx := context.Background()
	for i, s := range srvs {
		c := client(t, s.Addr())
		lo, hi := i*16384/3, (i+1)*16384/3-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if err := c.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(srvs[0].Port)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range srvs {
		c := client(t, s.Addr())
		eventually(t, 20*time.Second, "the cluster did not form", func() bool {
			info, _ := c.ClusterInfo(ctx).Result()
			return strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3")
		})
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[:1]})
	defer cc.Close()
	g := redisguard.New(cc, redisguard.Options{Interval: -1})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("a cluster whose masters all have noeviction: %v", err)
	}
	if st := g.Status(); len(st.Nodes) != 3 {
		t.Fatalf("read %d masters, want 3: %+v", len(st.Nodes), st.Nodes)
	}
	if err := client(t, addrs[2]).ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu").Err(); err != nil {
		t.Fatal(err)
	}
	err := redisguard.New(cc, redisguard.Options{Interval: -1}).Start(ctx)
	var ep *redisguard.EvictingPolicyError
	if !errors.As(err, &ep) || ep.Addr != addrs[2] || ep.Policy != "allkeys-lfu" {
		t.Fatalf("one master with allkeys-lfu: %v; want it refused by name", err)
	}
}

// Stop ends the background checks, and is safe twice or without Start.
func TestGuardStop(t *testing.T) {
	b := redistest.Mini(t)
	redisguard.New(b.Client, redisguard.Options{}).Stop()
	g := redisguard.New(b.Client, redisguard.Options{Interval: time.Millisecond})
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Stop()
	g.Stop()
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := gather(t, g); !strings.Contains(m, "source=embedded} 1\n") || !strings.Contains(m, "taskq_redis_eviction_policy_unsafe{} 0\n") ||
		strings.Contains(m, "used_memory") {
		t.Fatalf("metrics of an embedded Redis:\n%s", m)
	}
}
