package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// Partitions. A namespace's keys are spread over P partitions, each a key
// prefix with a hash tag of its own (PartitionPrefix), so that on a Redis
// Cluster one namespace, even one busy task, spreads over many slots and so
// many masters. P is fixed when the namespace is first used and recorded in
// its meta record (Keys.Meta), which every client and worker reads once.
//
//   - An idempotency key's partition depends on (namespace, key) alone
//     (KeyPartition), so keys stay namespace-wide across tasks; a run with a
//     key lives in its key's partition, so that claim, release, supersede,
//     attach and signal stay single-slot scripts.
//   - A run without a key goes to the partition its (random) ID hashes to.
//   - A run ID names its partition (RunPartition), so a lookup by ID touches
//     one slot.
//   - Namespace-wide records (meta, task registry, worker presence) stay in
//     the home partition, partition 0.

// DefaultPartitions is the partition count a namespace first used through
// rdb records when none is configured: on a Redis Cluster (a
// *redis.ClusterClient), the number of masters serving slots then, read
// with CLUSTER SHARDS (ClusterMasters), so that each master has one
// partition, the fewest that spread the namespace over every master; on
// one Redis, engine.PartitionsDefault, with no call.
//
// One partition per master makes a batch of triggers, a worker's read and
// its finishes the largest calls the spread allows: a script call costs
// about the same whatever it carries, so the same load over more
// partitions costs a node more per trigger and per run (docs/scaling.md,
// Choosing P). The count is recorded with the namespace, so the namespace
// keeps it when the cluster grows: a namespace meant to spread over more
// masters later is created with more partitions (Options.Partitions).
func DefaultPartitions(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return engine.PartitionsDefault, nil
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err == nil {
		return ClusterMasters(shards), nil
	}
	// CLUSTER SHARDS came with Redis 7.0; an older cluster lists its slot
	// ranges with CLUSTER SLOTS, each with the master serving it first.
	slots, slotsErr := cc.ClusterSlots(ctx).Result() //nolint:staticcheck // the one listing a cluster before Redis 7.0 answers
	if slotsErr != nil {
		return 0, fmt.Errorf("redisstore: reading the cluster's masters (CLUSTER SHARDS: %w; CLUSTER SLOTS: %w)", err, slotsErr)
	}
	return ClusterSlotMasters(slots), nil
}

// ClusterSlotMasters is ClusterMasters for a CLUSTER SLOTS reply: the
// distinct masters (each range's first node) serving a slot range.
func ClusterSlotMasters(slots []redis.ClusterSlot) int {
	masters := make(map[string]bool, len(slots))
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			masters[cmp.Or(s.Nodes[0].ID, s.Nodes[0].Addr)] = true
		}
	}
	return min(max(len(masters), 1), engine.PartitionsMax)
}

// ClusterMasters counts the masters serving slots in a CLUSTER SHARDS
// reply: the shards with at least one slot range (a shard is a master and
// its replicas, however many ranges it serves; a master being failed over
// still counts, as its slots are still its shard's), between 1 and
// engine.PartitionsMax.
func ClusterMasters(shards []redis.ClusterShard) int {
	n := 0
	for _, s := range shards {
		if len(s.Slots) > 0 {
			n++
		}
	}
	return min(max(n, 1), engine.PartitionsMax)
}

// PartitionPrefix is the key prefix of partition i of the n of namespace
// ns, the one rule every key is built by. Partition 0, the home partition,
// is taskq:{ns}: whatever n (a namespace with one partition has exactly the
// keys it had before partitions existed); its slot falls in one of n equal
// ranges of the 16384 slots, range h (HomeRange). Partition i >= 1 is
// taskq:{ns#<tag>}:, where tag is the decimal i, followed by ".<j>" for the
// smallest j >= 1 that puts the hash tag's cluster slot in range
// (h + i) mod n when i alone does not. So each range holds exactly one
// partition, and since masters own contiguous ranges of slots, a cluster of
// M masters with P a multiple of M gives each master P/M partitions,
// wherever the namespace's name hashes.
func PartitionPrefix(ns string, i, n int) string {
	if i <= 0 || n <= 1 {
		return "taskq:{" + ns + "}:"
	}
	r := (HomeRange(ns, n) + i) % n
	lo, hi := r*slotCount/n, (r+1)*slotCount/n
	tag := ns + "#" + strconv.Itoa(i)
	if s := tagSlot(tag); s >= lo && s < hi || lo >= hi {
		return "taskq:{" + tag + "}:"
	}
	// Each try lands in the range with odds (hi-lo)/16384 >= 1/n; the bound
	// is never reached in practice, and past it the tag stays valid.
	for j := 1; j < 64*slotCount; j++ {
		t := tag + "." + strconv.Itoa(j)
		if s := tagSlot(t); s >= lo && s < hi {
			return "taskq:{" + t + "}:"
		}
	}
	return "taskq:{" + tag + "}:"
}

// HomeRange is the range, of n equal ranges of the 16384 slots, that
// namespace ns's home partition falls in (see PartitionPrefix).
func HomeRange(ns string, n int) int {
	if n <= 1 {
		return 0
	}
	r := n * tagSlot(ns) / slotCount
	for r > 0 && r*slotCount/n > tagSlot(ns) { // integer ranges: [r*16384/n, (r+1)*16384/n)
		r--
	}
	for (r+1)*slotCount/n <= tagSlot(ns) {
		r++
	}
	return r
}

// plainID strips the partition an ID names, if it names a valid one.
func plainID(id string) string {
	if dot := strings.LastIndexByte(id, '.'); dot >= 0 {
		if _, ok := engine.RunPartition(id); ok {
			return id[:dot]
		}
	}
	return id
}

// Partitions is the layout of one namespace's partitions: how many, and
// the key builder of each. It is immutable.
type Partitions struct {
	ns   string
	keys []Keys
}

// NewPartitions returns the layout of n partitions of namespace ns (n is
// clamped to 1..PartitionsMax).
func NewPartitions(ns string, n int) *Partitions {
	n = min(max(n, 1), engine.PartitionsMax)
	p := &Partitions{ns: ns, keys: make([]Keys, n)}
	for i := range p.keys {
		p.keys[i] = partitionKeys(ns, i, n)
	}
	return p
}

// Count is P, the number of partitions.
func (p *Partitions) Count() int { return len(p.keys) }

// Keys is the key builder of partition i, which must be in 0..Count()-1.
func (p *Partitions) Keys(i int) Keys { return p.keys[i] }

// OfKey is the partition of an idempotency key (see KeyPartition).
func (p *Partitions) OfKey(key string) int { return engine.KeyPartition(p.ns, key, len(p.keys)) }

// OfRun is the partition a run (or event) ID names; ok is false when it
// names none of the namespace's partitions, so the run cannot exist.
func (p *Partitions) OfRun(id string) (int, bool) {
	i, ok := engine.RunPartition(id)
	return i, ok && i < len(p.keys)
}

// runKeys is the key builder of the partition id names, or an error
// matching ErrRunNotFound.
func (p *Partitions) runKeys(id string) (Keys, error) {
	i, ok := p.OfRun(id)
	if !ok {
		return Keys{}, fmt.Errorf("%w: %s", engine.ErrRunNotFound, id)
	}
	return p.keys[i], nil
}

// place names the run's partition in its ID and returns it: its
// idempotency key's partition, or for a run without a key the partition
// its plain ID hashes to (a random one, as IDs are random). Placing a run
// again changes nothing.
func (p *Partitions) place(e *engine.EnqueueParams) int {
	base := plainID(e.RunID)
	part := 0
	switch n := len(p.keys); {
	case n == 1:
	case e.Strategy != "" && e.Strategy != engine.StrategyNone:
		part = p.OfKey(e.Key)
	default:
		h := fnv.New32a()
		_, _ = h.Write([]byte(base))
		part = int(h.Sum32() % uint32(n))
	}
	e.RunID = engine.InPartition(base, part)
	return part
}

// NewPartitioned returns a Store for namespace ns on rdb configured with
// partitions partitions: the namespace's recorded count must be that one
// (0: adopt it, see Store.Partitions).
func NewPartitioned(rdb redis.UniversalClient, ns string, partitions int) *Store {
	s := New(rdb, ns)
	s.want = partitions
	return s
}

// Partitions returns the namespace's partition layout. The first call
// reads the count from the namespace's meta record, one round trip; a
// namespace that has none records it then: the configured count (see
// NewPartitioned), 1 for a namespace holding data from before partitions
// existed, or DefaultPartitions. Later calls return it at once. A
// configured count other than the recorded one fails with a
// *PartitionsMismatchError.
func (s *Store) Partitions(ctx context.Context) (*Partitions, error) {
	if p := s.parts.Load(); p != nil {
		return p, nil
	}
	select {
	case s.resolving <- struct{}{}:
		defer func() { <-s.resolving }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p := s.parts.Load(); p != nil {
		return p, nil
	}
	n, err := s.readPartitions(ctx)
	if err != nil {
		return nil, err
	}
	s.loadLibrary(ctx)
	p := NewPartitions(s.keys.ns, n)
	s.parts.Store(p)
	return p, nil
}

// KnownPartitions returns the layout once Partitions has read it, and nil
// before.
func (s *Store) KnownPartitions() *Partitions { return s.parts.Load() }

// readPartitions reads the recorded count, recording one first if there
// is none.
func (s *Store) readPartitions(ctx context.Context) (int, error) {
	meta := s.keys.Meta()
	var (
		get    *redis.StringCmd
		exists *redis.IntCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.HGet(ctx, meta, metaPartitions)
		// Keys of the home partition, which share one slot.
		exists = p.Exists(ctx, s.keys.Runs(), s.keys.Tasks(), s.keys.Events())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	if v, err := get.Result(); err == nil {
		return s.recorded(v)
	}
	n := s.want
	switch {
	case exists.Val() > 0:
		// Data from before partitions: all of it is in the home partition.
		if n != 0 && n != 1 {
			return 0, &engine.PartitionsMismatchError{Namespace: s.keys.ns, Configured: n, Recorded: 1}
		}
		n = 1
	case n == 0:
		if n, err = DefaultPartitions(ctx, s.rdb); err != nil {
			return 0, err
		}
	}
	var set *redis.BoolCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, meta, metaPartitions, n)
		get = p.HGet(ctx, meta, metaPartitions)
		return nil
	})
	if v, gerr := get.Result(); gerr == nil {
		// Recorded now, or by another process a moment before.
		return s.recorded(v)
	}
	if err == nil {
		err = set.Err()
	}
	if err = scriptError(err); errors.Is(err, engine.ErrOutOfMemory) || errors.Is(err, engine.ErrReadOnly) {
		// Redis refuses writes (at maxmemory, or a replica) but serves
		// reads: work with the count it would have recorded, so that a
		// worker can still drain the queue; a process opening the
		// namespace later records it.
		return n, nil
	}
	return 0, err
}

// recorded checks the count the meta record holds against the configured
// one.
func (s *Store) recorded(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > engine.PartitionsMax {
		return 0, fmt.Errorf("redisstore: namespace %q: its meta record %s holds partitions %q, not a number from 1 to %d",
			s.keys.ns, s.keys.Meta(), v, engine.PartitionsMax)
	}
	if s.want != 0 && s.want != n {
		return 0, &engine.PartitionsMismatchError{Namespace: s.keys.ns, Configured: s.want, Recorded: n}
	}
	return n, nil
}

// RecordPartitions writes the namespace's partition count back into its
// meta record if the record is gone (Redis lost its data while this
// process ran), so that processes opening the namespace later adopt it. A
// Redis that refuses writes (at maxmemory, a replica) is no error: the
// count is recorded by a later call.
func (s *Store) RecordPartitions(ctx context.Context) error {
	p := s.parts.Load()
	if p == nil {
		_, err := s.Partitions(ctx)
		return err
	}
	err := scriptError(s.rdb.HSetNX(ctx, s.keys.Meta(), metaPartitions, p.Count()).Err())
	if errors.Is(err, engine.ErrOutOfMemory) || errors.Is(err, engine.ErrReadOnly) {
		return nil
	}
	return err
}

// runPartition is the partition of run id, or an error matching
// ErrRunNotFound when it names none of parts.
func runPartition(parts *Partitions, id string) (int, error) {
	if i, ok := parts.OfRun(id); ok {
		return i, nil
	}
	return 0, fmt.Errorf("%w: %s", engine.ErrRunNotFound, id)
}

// fillErr sets every error of errs to err and returns errs.
func fillErr(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// keysOfRun is the key builder of the partition run (or event) id is in,
// or an error matching ErrRunNotFound when it names none.
func (s *Store) keysOfRun(ctx context.Context, id string) (Keys, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return Keys{}, err
	}
	return parts.runKeys(id)
}

// keysOfKey is the key builder of the partition idempotency key key is in.
func (s *Store) keysOfKey(ctx context.Context, key string) (Keys, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return Keys{}, err
	}
	return parts.keys[parts.OfKey(key)], nil
}

// RunKeys is the key builder of the partition run id is in (reading the
// namespace's partitions first if need be), or an error matching
// ErrRunNotFound when it names none of them.
func (s *Store) RunKeys(ctx context.Context, id string) (Keys, error) { return s.keysOfRun(ctx, id) }

// KeyKeys is the key builder of the partition idempotency key key is in.
func (s *Store) KeyKeys(ctx context.Context, key string) (Keys, error) { return s.keysOfKey(ctx, key) }

// partitionKeys is the key builder of partition part, which must be one of
// the namespace's.
func (s *Store) partitionKeys(ctx context.Context, part int) (Keys, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return Keys{}, err
	}
	if part < 0 || part >= parts.Count() {
		return Keys{}, fmt.Errorf("redisstore: partition %d: namespace %q has %d", part, s.keys.ns, parts.Count())
	}
	return parts.keys[part], nil
}
