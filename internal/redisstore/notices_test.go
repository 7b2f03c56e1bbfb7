package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// subscribeNotices subscribes a Notices of s to chans and waits until Redis
// has confirmed each; it is closed when the test ends.
func subscribeNotices(t *testing.T, s *redisstore.Store, chans ...string) *redisstore.Notices {
	t.Helper()
	n := s.Notices()
	t.Cleanup(func() { _ = n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Subscribe(ctx, chans...); err != nil {
		t.Fatal(err)
	}
	waitNotice(t, n, engine.NoticeSubscribed, 10*time.Second, chans...)
	return n
}

// waitNotice reads n until a notice of kind has come for each of chans (a
// NoticeInterrupted counts for every channel it names), within d, and
// fails on a message meanwhile.
func waitNotice(t *testing.T, n *redisstore.Notices, kind engine.NoticeKind, d time.Duration, chans ...string) {
	t.Helper()
	waiting := map[string]bool{}
	for _, ch := range chans {
		waiting[ch] = true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for len(waiting) > 0 {
		select {
		case nt := <-n.C():
			if nt.Kind == engine.NoticeMessage {
				t.Fatalf("a notice on %s (%q) while waiting for %v", nt.Channel, nt.Payload, waiting)
			}
			if nt.Kind == kind {
				delete(waiting, nt.Channel)
				for _, ch := range nt.Channels {
					delete(waiting, ch)
				}
			}
		case <-timer.C:
			t.Fatalf("no notice of kind %d within %s for %v", kind, d, waiting)
		}
	}
}

// receive returns the next count messages of n, by channel.
func receive(t *testing.T, n *redisstore.Notices, count int) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	for count > 0 {
		select {
		case nt := <-n.C():
			if nt.Kind == engine.NoticeMessage {
				got[nt.Channel] = append(got[nt.Channel], nt.Payload)
				count--
			}
		case <-timer.C:
			t.Fatalf("%d notices missing; got %v", count, got)
		}
	}
	return got
}

// publishNotice publishes msg on ch as the store's scripts do on b:
// SPUBLISH on a cluster, PUBLISH otherwise.
func publishNotice(t *testing.T, b *redistest.Backend, ch, msg string) {
	t.Helper()
	var err error
	if cc, ok := b.Client.(*redis.ClusterClient); ok {
		err = cc.SPublish(context.Background(), ch, msg).Err()
	} else {
		err = b.Client.Publish(context.Background(), ch, msg).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// commandCalls reads how often each of cmds ran on c (INFO commandstats).
func commandCalls(t *testing.T, c *redis.Client, cmds ...string) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range cmds {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
			if !ok {
				continue
			}
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest+",", ',')])
			out[cmd] = n
		}
	}
	return out
}

// masters returns a client of each master of the cluster, closed when the
// test ends.
func masters(t *testing.T, cc *redis.ClusterClient) []*redis.Client {
	t.Helper()
	var (
		mu    sync.Mutex
		addrs []string
	)
	err := cc.ForEachMaster(context.Background(), func(_ context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		if a := m.Options().Addr; !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(addrs)
	out := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		out[i] = redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { _ = out[i].Close() })
	}
	return out
}

// On a cluster the scripts publish every notice with SPUBLISH, on the
// master of the channel's slot only: a cancel's notices (the cancel
// channel, the run's done channel, the finished channel, all in the run's
// partition) are counted as SPUBLISH on that master and nowhere else, and
// no PUBLISH (which every node would relay) runs. A subscription to the
// cancel channels of partitions on every master holds one connection per
// master, a sharded subscription per channel on the channel's master, and
// receives each notice.
func TestNoticesGoToOneShardOnACluster(t *testing.T) {
	b := redistest.Cluster(t)
	cc := b.Client.(*redis.ClusterClient)
	ctx := context.Background()
	name := "notices-" + b.Namespace
	sub := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cc.Options().Addrs, ClientName: name})
	t.Cleanup(func() { _ = sub.Close() })
	const partitions = 6
	s := redisstore.NewPartitioned(cc, b.Namespace, partitions)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms := masters(t, cc)
	var cancels []string
	for i := range partitions {
		cancels = append(cancels, parts.Keys(i).CancelChannel())
	}

	p := &engine.EnqueueParams{RunID: "sharded-1", Task: "t", Input: []byte(`{}`), Meta: []byte(`{}`),
		Strategy: engine.StrategyNone, Retention: time.Hour, Now: time.Now()}
	if _, err := s.Enqueue(ctx, p); err != nil {
		t.Fatal(err)
	}
	ks, err := s.RunKeys(ctx, p.RunID)
	if err != nil {
		t.Fatal(err)
	}
	chans := append([]string{ks.DoneChannel(p.RunID), ks.FinishedChannel()}, cancels...)
	n := subscribeNotices(t, redisstore.New(sub, b.Namespace), chans...)
	owner, err := cc.MasterForKey(ctx, ks.CancelChannel())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		// One Pub/Sub connection per master: the partitions span them all.
		list, err := m.Do(ctx, "client", "list", "type", "pubsub").Text()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(list, "name="+name+" "); got != 1 {
			t.Errorf("master %s: %d connections of the subscription, want 1", m.Options().Addr, got)
		}
		for _, ch := range chans {
			mine, err := cc.MasterForKey(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if mine.Options().Addr == m.Options().Addr {
				want = 1
			}
			got, err := m.PubSubShardNumSub(ctx, ch).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got[ch] != want {
				t.Errorf("master %s: %d sharded subscribers of %s, want %d", m.Options().Addr, got[ch], ch, want)
			}
		}
	}

	if st, err := s.WatchRun(ctx, p.RunID); err != nil || st != "queued" {
		t.Fatalf("watch = %q, %v", st, err)
	}
	before := make([]map[string]int, len(ms))
	for i, m := range ms {
		before[i] = commandCalls(t, m, "publish", "spublish")
	}
	if r, err := s.Cancel(ctx, p.RunID, "by test", time.Now()); err != nil || !r.Written {
		t.Fatalf("cancel = %+v, %v", r, err)
	}
	got := receive(t, n, 3)
	if fmt.Sprint(got[ks.CancelChannel()]) != "["+p.RunID+"]" || fmt.Sprint(got[ks.DoneChannel(p.RunID)]) != "[cancelled]" ||
		fmt.Sprint(got[ks.FinishedChannel()]) != "[cancelled 1]" {
		t.Fatalf("notices = %v", got)
	}
	for i, m := range ms {
		after := commandCalls(t, m, "publish", "spublish")
		spub, pub := after["spublish"]-before[i]["spublish"], after["publish"]-before[i]["publish"]
		want := 0
		if m.Options().Addr == owner.Options().Addr {
			want = 3
		}
		if spub != want || pub != 0 {
			t.Errorf("master %s: %d SPUBLISH and %d PUBLISH, want %d and none", m.Options().Addr, spub, pub, want)
		}
	}

	// Unsubscribed, a channel is no longer subscribed on its master.
	if err := n.Unsubscribe(ctx, cancels...); err != nil {
		t.Fatal(err)
	}
	for _, ch := range cancels {
		m, err := cc.MasterForKey(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for m.PubSubShardNumSub(ctx, ch).Val()[ch] != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s still subscribed after Unsubscribe", ch)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// After the master of a subscribed channel's slot is killed and its
// replica promoted, the subscription says the channel was interrupted,
// subscribes it again on the new master by itself, and receives the
// notices scripts publish there; channels on other masters keep theirs
// throughout.
func TestNoticesFollowAFailover(t *testing.T) {
	t.Parallel()
	pc := redistest.StartCluster(t, 3, 1)
	cc := pc.Client(t)
	ctx := context.Background()
	ns := redistest.Namespace(t)
	const partitions = 3
	s := redisstore.NewPartitioned(cc, ns, partitions)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cancels []string
	for i := range partitions {
		cancels = append(cancels, parts.Keys(i).CancelChannel())
	}
	n := subscribeNotices(t, s, cancels...)

	const target = 1
	ch := parts.Keys(target).CancelChannel()
	victim := killMasterOf(t, pc, cc, ch)
	waitNotice(t, n, engine.NoticeInterrupted, 20*time.Second, ch)
	waitPromoted(t, cc, ch, victim, 20*time.Second)
	waitNotice(t, n, engine.NoticeSubscribed, 20*time.Second, ch)

	// A run of that partition, cancelled on the new master.
	p := &engine.EnqueueParams{RunID: "failover-1", Task: "t", Input: []byte(`{}`), Meta: []byte(`{}`),
		Key: keyIn(parts, target), Strategy: engine.StrategyTTL, Hold: time.Minute, Retention: time.Hour, Now: time.Now()}
	enqueueRetrying(t, s, p)
	if r, err := s.Cancel(ctx, p.RunID, "after the failover", time.Now()); err != nil || !r.Written {
		t.Fatalf("cancel = %+v, %v", r, err)
	}
	if got := receive(t, n, 1); fmt.Sprint(got[ch]) != "["+p.RunID+"]" {
		t.Fatalf("notices after the failover = %v", got)
	}
	// The other partitions' channels are subscribed still (or again).
	for _, ch := range cancels {
		m, err := cc.MasterForKey(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.PubSubShardNumSub(ctx, ch).Val()[ch]; got != 1 {
			t.Errorf("%s: %d sharded subscribers on its master, want 1", ch, got)
		}
	}
}

// keyIn returns an idempotency key of partition part.
func keyIn(parts *redisstore.Partitions, part int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("k%d", i); parts.OfKey(k) == part {
			return k
		}
	}
}

// killMasterOf kills the master of key's slot and returns its address.
func killMasterOf(t *testing.T, pc *redistest.PrivateCluster, cc *redis.ClusterClient, key string) string {
	t.Helper()
	m, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	addr := m.Options().Addr
	for _, node := range pc.Nodes {
		if node.Addr() == addr {
			node.Kill()
			return addr
		}
	}
	t.Fatalf("no node at %s", addr)
	return ""
}

// waitPromoted waits until the cluster names a master other than old for
// key's slot.
func waitPromoted(t *testing.T, cc *redis.ClusterClient, key, old string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		cc.ReloadState(context.Background())
		if m, err := cc.MasterForKey(context.Background(), key); err == nil && m.Options().Addr != old &&
			m.Ping(context.Background()).Err() == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica promoted for %s within %s", key, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// enqueueRetrying enqueues p, trying again while the cluster settles after
// a failover (within 20 s).
func enqueueRetrying(t *testing.T, s *redisstore.Store, p *engine.EnqueueParams) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := s.Enqueue(ctx, p)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("enqueue after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// On one Redis, a subscription whose server restarts says its channels
// were interrupted, subscribes them again by itself once the server is
// back (go-redis dials again), and receives what is published then.
func TestNoticesResubscribeAfterARestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s := redisstore.New(rdb, redistest.Namespace(t))
	chans := []string{s.Keys().CancelChannel(), s.Keys().FinishedChannel()}
	n := subscribeNotices(t, s, chans...)
	srv.Restart()
	waitNotice(t, n, engine.NoticeInterrupted, 20*time.Second, chans...)
	waitNotice(t, n, engine.NoticeSubscribed, 20*time.Second, chans...)
	b := &redistest.Backend{Client: rdb}
	publishNotice(t, b, chans[0], "r1")
	if got := receive(t, n, 1); fmt.Sprint(got[chans[0]]) != "[r1]" {
		t.Fatalf("notices after the restart = %v", got)
	}
}

// On a cluster, the sharded forms of the scripts that supersede and end
// runs (enqueue.lua's takeover, finish.lua) publish their notices where a
// sharded subscriber gets them: the superseded owner on the cancel
// channel, the counts on the finished channel, the watched run's status on
// its done channel.
func TestSupersedeAndFinishPublishShardedOnACluster(t *testing.T) {
	b := redistest.Cluster(t)
	ctx := context.Background()
	s := redisstore.NewPartitioned(b.Client, b.Namespace, 1)
	if _, err := s.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, b: b, s: s, k: s.Keys(), ctx: ctx, now: time.Now()}
	old := f.params("t", "k", engine.StrategyStatus)
	f.running(old, "c")
	newer := f.params("t", "k", engine.StrategyStatus)
	newer.Policy = engine.PolicySupersede
	n := subscribeNotices(t, s, f.k.CancelChannel(), f.k.FinishedChannel(), f.k.DoneChannel(newer.RunID))
	if r := f.enqueue(newer); !r.Accepted || r.Superseded != old.RunID {
		t.Fatalf("supersede = %+v", r)
	}
	got := receive(t, n, 2)
	if fmt.Sprint(got[f.k.CancelChannel()]) != "["+old.RunID+"|"+newer.RunID+"]" ||
		fmt.Sprint(got[f.k.FinishedChannel()]) != "[cancelled 1]" {
		t.Fatalf("notices of the takeover = %v", got)
	}
	if st, err := s.WatchRun(ctx, newer.RunID); err != nil || st != "queued" {
		t.Fatalf("watch = %q, %v", st, err)
	}
	ds := f.read("t", "c")
	if len(ds) != 1 || ds[0].RunID != newer.RunID {
		t.Fatalf("deliveries = %+v", ds)
	}
	st := f.start(ds[0], "c")
	if r := f.finish(newer.RunID, st.Attempt, engine.OutcomeSucceeded, "{}"); !r.Written {
		t.Fatalf("finish = %+v", r)
	}
	got = receive(t, n, 2)
	if fmt.Sprint(got[f.k.DoneChannel(newer.RunID)]) != "[succeeded]" || fmt.Sprint(got[f.k.FinishedChannel()]) != "[succeeded 1]" {
		t.Fatalf("notices of the finish = %v", got)
	}
}
