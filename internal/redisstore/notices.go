package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// noticeRetryMax bounds the wait between two attempts to subscribe the
// channels of a broken connection again; during a cluster failover the
// slot's master is gone until its replica is promoted.
const noticeRetryMax = time.Second

// Notices is one subscription to notice channels (a run's done channel,
// the finished and cancel channels of partitions), whatever the channels'
// partitions, that subscribes them again after an interruption.
//
// On one Redis it is one Pub/Sub connection (SUBSCRIBE), which go-redis
// re-establishes itself. On a Redis Cluster the scripts publish with
// SPUBLISH, whose notice goes to the shard of the channel's slot only, so
// channels are subscribed with SSUBSCRIBE on the master of their slot: one
// connection per master in use, one SSUBSCRIBE per slot (Redis refuses one
// that names two). go-redis would re-establish such a connection to the
// same node, and in one SSUBSCRIBE of every slot; so a broken connection
// is closed instead and its channels placed again, on the masters the
// cluster names then (after a failover, the promoted replica), until it
// succeeds or the subscription is closed.
type Notices struct {
	c    chan engine.Notice
	quit chan struct{}
	wg   sync.WaitGroup

	// single is the one connection on one Redis; nil on a cluster.
	single *redis.PubSub
	// cluster is the cluster client, nil on one Redis.
	cluster *redis.ClusterClient

	mu     sync.Mutex
	closed bool
	// channels are the channels subscribed on one Redis; reading is set
	// once a goroutine reads its connection.
	channels map[string]struct{}
	reading  bool
	// shards are the cluster's connections, by master; where says which
	// carries each channel subscribed, nil while it is being placed again.
	shards map[*redis.Client]*noticeShard
	where  map[string]*noticeShard
	// lost are channels to report interrupted, placing is set while a
	// goroutine reports them and places channels again (see replace).
	lost    []string
	placing bool
}

// noticeShard is one connection to a cluster master and the channels
// subscribed on it.
type noticeShard struct {
	node     *redis.Client
	ps       *redis.PubSub
	channels map[string]struct{}
	retired  bool
}

// Notices returns a subscription to no channel yet: on one Redis, with
// SUBSCRIBE; on a Redis Cluster, with SSUBSCRIBE, as the store's scripts
// publish there with SPUBLISH. It holds no connection until a channel is
// subscribed. Read C until it is closed, which Close does.
func (s *Store) Notices() *Notices {
	n := &Notices{c: make(chan engine.Notice, 64), quit: make(chan struct{})}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok && s.sharded {
		n.cluster = cc
		n.shards = map[*redis.Client]*noticeShard{}
		n.where = map[string]*noticeShard{}
		return n
	}
	// Not the caller's ctx: the connection outlives the call.
	n.single = s.rdb.Subscribe(context.Background())
	n.channels = map[string]struct{}{}
	return n
}

// C delivers the subscription's notices. It is closed after Close.
func (n *Notices) C() <-chan engine.Notice { return n.c }

// Subscribe subscribes to channels. It returns once the subscription is
// sent, not confirmed: a NoticeSubscribed per channel says when it is.
// Subscribing to a channel again asks Redis to confirm it again. A channel
// that could not be subscribed (the error says why) is subscribed later,
// as after an interruption, until it is unsubscribed.
func (n *Notices) Subscribe(ctx context.Context, channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return redis.ErrClosed
	}
	if n.single != nil {
		if !n.reading {
			// Its first read dials: not before a channel is asked for.
			n.reading = true
			n.wg.Add(1)
			go n.receiveSingle()
		}
		for _, ch := range channels {
			n.channels[ch] = struct{}{}
		}
		return n.single.Subscribe(ctx, channels...)
	}
	if err := n.place(ctx, channels); err != nil {
		// Kept, as go-redis keeps a channel it could not subscribe on one
		// Redis: subscribed once the cluster answers, unless unsubscribed.
		for _, ch := range channels {
			if _, ok := n.where[ch]; !ok {
				n.where[ch] = nil // to be placed
			}
		}
		n.replaceLocked()
		return err
	}
	return nil
}

// Unsubscribe ends the subscription to channels.
func (n *Notices) Unsubscribe(ctx context.Context, channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	if n.single != nil {
		for _, ch := range channels {
			delete(n.channels, ch)
		}
		return n.single.Unsubscribe(ctx, channels...)
	}
	bySlot := map[*noticeShard]map[int][]string{}
	for _, ch := range channels {
		sh := n.where[ch]
		n.drop(ch)
		if sh == nil {
			continue
		}
		if bySlot[sh] == nil {
			bySlot[sh] = map[int][]string{}
		}
		bySlot[sh][Slot(ch)] = append(bySlot[sh][Slot(ch)], ch)
	}
	var errs []error
	for sh, slots := range bySlot {
		for _, chs := range slots {
			errs = append(errs, sh.ps.SUnsubscribe(ctx, chs...))
		}
	}
	return errors.Join(errs...)
}

// Close ends the subscription, closes its connections and then C.
func (n *Notices) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	close(n.quit)
	shards := slices.Collect(maps.Values(n.shards))
	n.shards, n.where = nil, nil
	for _, sh := range shards {
		sh.retired = true
	}
	n.mu.Unlock()
	var err error
	if n.single != nil {
		err = n.single.Close()
	}
	for _, sh := range shards {
		err = errors.Join(err, sh.ps.Close())
	}
	n.wg.Wait()
	close(n.c)
	return err
}

// send hands nt to the reader of C, unless the subscription closes first.
func (n *Notices) send(nt engine.Notice) bool {
	select {
	case n.c <- nt:
		return true
	case <-n.quit:
		return false
	}
}

// sleep waits for d, or until the subscription closes, which it reports.
func (n *Notices) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.quit:
		return false
	}
}

// receiveSingle reads the one connection on one Redis. After an error
// go-redis dials again and subscribes every channel again on the next
// read, whose confirmations come as NoticeSubscribed.
func (n *Notices) receiveSingle() {
	defer n.wg.Done()
	for {
		msg, err := n.single.Receive(context.Background())
		select {
		case <-n.quit:
			return
		default:
		}
		if err != nil {
			if chs := n.singleChannels(); len(chs) > 0 && !n.send(engine.Notice{Kind: engine.NoticeInterrupted, Channels: chs}) {
				return
			}
			if !n.sleep(100 * time.Millisecond) {
				return
			}
			continue
		}
		if !n.forward(msg, nil) {
			return
		}
	}
}

// singleChannels are the channels subscribed on one Redis.
func (n *Notices) singleChannels() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Collect(maps.Keys(n.channels))
}

// forward hands a message a connection received to the reader of C: the
// confirmations and notices; on a cluster, a sunsubscribe that Redis sent
// unasked (the channel's slot moved) has the channel placed again.
func (n *Notices) forward(msg any, sh *noticeShard) bool {
	switch m := msg.(type) {
	case *redis.Subscription:
		switch m.Kind {
		case "subscribe", "ssubscribe":
			return n.send(engine.Notice{Kind: engine.NoticeSubscribed, Channel: m.Channel})
		case "sunsubscribe":
			if sh != nil {
				n.movedAway(sh, m.Channel)
			}
		}
	case *redis.Message:
		return n.send(engine.Notice{Kind: engine.NoticeMessage, Channel: m.Channel, Payload: m.Payload})
	}
	return true
}

// place subscribes channels on the masters of their slots, one SSUBSCRIBE
// per slot. n.mu is held.
func (n *Notices) place(ctx context.Context, channels []string) error {
	type group struct {
		sh    *noticeShard
		slots map[int][]string
	}
	var groups []*group
	for _, ch := range channels {
		node, err := n.cluster.MasterForKey(ctx, ch)
		if err != nil {
			return fmt.Errorf("find the master of %q: %w", ch, err)
		}
		sh := n.shards[node]
		if sh == nil {
			sh = &noticeShard{node: node, ps: node.SSubscribe(context.Background()), channels: map[string]struct{}{}}
			n.shards[node] = sh
			n.wg.Add(1)
			go n.receiveShard(sh)
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.sh == sh })
		if i < 0 {
			groups = append(groups, &group{sh: sh, slots: map[int][]string{}})
			i = len(groups) - 1
		}
		groups[i].slots[Slot(ch)] = append(groups[i].slots[Slot(ch)], ch)
	}
	for _, g := range groups {
		for _, chs := range g.slots {
			if err := g.sh.ps.SSubscribe(ctx, chs...); err != nil {
				n.retire(g.sh)
				return err
			}
			for _, ch := range chs {
				if old := n.where[ch]; old != nil && old != g.sh {
					delete(old.channels, ch)
				}
				n.where[ch] = g.sh
				g.sh.channels[ch] = struct{}{}
			}
		}
	}
	return nil
}

// drop forgets channel ch. n.mu is held.
func (n *Notices) drop(ch string) {
	if sh := n.where[ch]; sh != nil {
		delete(sh.channels, ch)
	}
	delete(n.where, ch)
}

// retire closes sh's connection and has its channels reported
// interrupted and placed again (see replace). n.mu is held.
func (n *Notices) retire(sh *noticeShard) {
	if sh.retired {
		return
	}
	sh.retired = true
	delete(n.shards, sh.node)
	for ch := range sh.channels {
		if n.where[ch] == sh {
			n.where[ch] = nil
			n.lost = append(n.lost, ch)
		}
	}
	// Closing makes its reader's Receive return, and stops go-redis from
	// dialling the node again.
	_ = sh.ps.Close()
	n.replaceLocked()
}

// movedAway has ch, which Redis unsubscribed on sh unasked (its slot
// moved to another master), reported interrupted and placed again, unless
// it was unsubscribed or placed elsewhere since.
func (n *Notices) movedAway(sh *noticeShard, ch string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.where[ch] != sh {
		return
	}
	delete(sh.channels, ch)
	n.where[ch] = nil
	n.lost = append(n.lost, ch)
	n.replaceLocked()
}

// receiveShard reads one master's connection on a cluster until it is
// retired; an error retires it and has its channels placed again.
func (n *Notices) receiveShard(sh *noticeShard) {
	defer n.wg.Done()
	for {
		msg, err := sh.ps.Receive(context.Background())
		n.mu.Lock()
		retired := sh.retired || n.closed
		if err != nil && !retired {
			n.retire(sh)
		}
		n.mu.Unlock()
		if err != nil || retired {
			return
		}
		if !n.forward(msg, sh) {
			return
		}
	}
}

// replaceLocked starts placing again, on a goroutine, the channels that
// are wanted but carried by no connection, unless one does so already.
// n.mu is held.
func (n *Notices) replaceLocked() {
	if n.placing || n.closed {
		return
	}
	n.placing = true
	n.wg.Add(1)
	go n.replace()
}

// replace reports the channels lost as interrupted, then places the
// channels no connection carries, asking the cluster client to read the
// slots' masters again before each attempt, until they are placed or the
// subscription closes. During a failover the attempts fail until the
// replica is promoted and the cluster names it. The report goes first, so
// that the reader of C sees a channel interrupted before it sees it
// subscribed again.
func (n *Notices) replace() {
	defer n.wg.Done()
	wait := 50 * time.Millisecond
	for {
		n.mu.Lock()
		lost := n.lost
		n.lost = nil
		n.mu.Unlock()
		if len(lost) > 0 && !n.send(engine.Notice{Kind: engine.NoticeInterrupted, Channels: lost}) {
			return
		}
		n.cluster.ReloadState(context.Background())
		if !n.sleep(wait) {
			return
		}
		wait = min(2*wait, noticeRetryMax)
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return
		}
		var pending []string
		for ch, sh := range n.where {
			if sh == nil {
				pending = append(pending, ch)
			}
		}
		if len(pending) == 0 && len(n.lost) == 0 {
			n.placing = false
			n.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), noticeRetryMax)
		_ = n.place(ctx, pending) // those not placed are tried again
		cancel()
		n.mu.Unlock()
	}
}
