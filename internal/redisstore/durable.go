package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisguard"
)

// Durable acknowledgement: a trigger that asks for it returns only once
// WAIT (or WAITAOF) confirms that replicas hold its write.
//
// WAIT counts the replicas that acknowledged the replication offset of the
// connection's last write, so it must run on the connection that wrote,
// after the write. The store sends the script calls of a batch, a small
// write (the ack mark) and one WAIT as one pipeline, which go-redis runs on
// one connection of the master that serves the calls' slot: a
// *redis.Client's own, or on a cluster the master MasterForKey names. So a
// batch pays one WAIT, not one per trigger.
//
// The ack mark is what makes the WAIT cover a duplicate: a trigger that was
// deduplicated to an existing run (rejected, attached) writes nothing, so
// its connection's last write may predate the owner's, whose record may
// not have reached a replica yet. The mark is written after the script, so
// its offset is past every write Redis ran before it, the owner's
// included, and WAIT waits for that.

// ackMarkTTL is how long the ack mark outlives its last write: it is
// needed only for the moment its WAIT runs.
const ackMarkTTL = time.Minute

// durableAttempts bounds how often a call is sent again after an answer
// that says nothing ran (NOSCRIPT, MOVED, ASK, TRYAGAIN).
const durableAttempts = 5

// waitMargin is the time left, before the call's deadline, for WAIT's
// reply to come back: WAIT's own timeout is shortened to leave it, so that
// a wait that falls short is reported with the count Redis reached rather
// than as a timeout of the connection.
const waitMargin = 20 * time.Millisecond

// serverVersion caches the lowest redis_version of the store's masters,
// read once (again only after a failed read).
type serverVersion struct {
	mu      sync.Mutex
	version string
}

// ServerVersion is the redis_version of the server, or on a cluster the
// lowest of its masters'. It is read once and remembered.
func (s *Store) ServerVersion(ctx context.Context) (string, error) {
	s.version.mu.Lock()
	defer s.version.mu.Unlock()
	if s.version.version != "" {
		return s.version.version, nil
	}
	read := func(ctx context.Context, c *redis.Client) (string, error) {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return "", err
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				return v, nil
			}
		}
		return "", errors.New("redisstore: INFO server has no redis_version")
	}
	var (
		mu sync.Mutex
		v  string
	)
	err := redisguard.ForEachMaster(ctx, s.rdb, func(ctx context.Context, m *redis.Client) error {
		mv, err := read(ctx, m)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if v == "" || versionLess(mv, v) {
			v = mv
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	s.version.version = v
	return v, nil
}

// CheckDurability says whether the server can give d: a local fsync needs
// Redis 7.2 or later (an *FsyncUnsupportedError otherwise). Replicas alone
// need nothing checked: WAIT exists since Redis 3.0.
func (s *Store) CheckDurability(ctx context.Context, d engine.Durability) error {
	if !d.LocalFsync {
		return nil
	}
	v, err := s.ServerVersion(ctx)
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			// Redis answered, and not with its version.
			return &engine.FsyncUnsupportedError{Addr: s.addr, Err: err}
		}
		return fmt.Errorf("read the server version: %w", err)
	}
	if versionLess(v, "7.2") {
		return &engine.FsyncUnsupportedError{Addr: s.addr, Version: v}
	}
	return nil
}

// versionLess compares dotted versions numerically ("7.0.15" < "7.2").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// durableCall is one call of a batch script: its KEYS and ARGV, and the key
// prefix its ARGV[1] hands the script, which names its slot.
type durableCall struct {
	keys   []string
	args   []any
	prefix string
}

// callReply is the reply to one call sent durably, and how far the
// pipeline that carried it got.
type callReply struct {
	v   any
	err error
	ack engine.Ack
}

// evalBatchDurable is evalBatch with durable acknowledgement: the calls go
// out as one pipeline per master, each followed by the ack mark and one
// WAIT (see runDurable). acks[i] is how far item i's write reached; it is
// meaningful where errs[i] is nil. Every batch script takes its key prefix
// as ARGV[1].
func (s *Store) evalBatchDurable(ctx context.Context, sc *script, groups [][]int, n int, d engine.Durability, build func(items []int) ([]string, []any), parse func(i int, r []any) (int, error)) ([]error, []engine.Ack) {
	errs, acks := make([]error, n), make([]engine.Ack, n)
	calls := batchCalls(groups, build)
	sent := make([]durableCall, len(calls))
	for i, c := range calls {
		prefix, _ := c.args[0].(string)
		sent[i] = durableCall{keys: c.keys, args: c.args, prefix: prefix}
	}
	replies := s.runDurable(ctx, sc, sent, d)
	for k, r := range replies {
		parseCall(sc, calls[k].items, r.v, r.err, parse, errs)
		for _, i := range calls[k].items {
			acks[i] = r.ack
		}
	}
	return errs, acks
}

// runDurable sends calls of sc, each followed on its connection by the ack
// mark and a WAIT for d (see the top of this file), and returns each
// call's reply with the level its pipeline reached. Calls to one master
// share one pipeline, one mark per slot and one WAIT; the pipelines of
// several masters run at once. A call that Redis did not run (its script
// was not cached, its slot moved) is sent again, with its own WAIT.
func (s *Store) runDurable(ctx context.Context, sc *script, calls []durableCall, d engine.Durability) []callReply {
	d = engine.WithDefaults(d)
	out := make([]callReply, len(calls))
	if err := s.CheckDurability(ctx, d); err != nil {
		for i := range out {
			out[i].err = err
		}
		return out
	}
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	source := make([]bool, len(calls)) // send EVAL, not FCALL or EVALSHA
	for attempt := 1; len(pending) > 0; attempt++ {
		groups, err := s.durableNodes(ctx, calls, pending)
		if err != nil {
			for _, i := range pending {
				out[i].err = err
			}
			return out
		}
		var (
			mu    sync.Mutex
			again []int
			moved bool
			wg    sync.WaitGroup
		)
		for _, g := range groups {
			wg.Go(func() {
				fn, err := s.loadOn(ctx, g.node, sc)
				if err != nil {
					mu.Lock()
					defer mu.Unlock()
					for _, i := range g.calls {
						out[i].err = err
					}
					return
				}
				retry, m, broken := s.pipeDurable(ctx, g.node, sc, fn, calls, g.calls, source, d, out)
				if cc, ok := s.rdb.(*redis.ClusterClient); ok && broken {
					// The master may be gone (a failover): the calls fail
					// (retrying them with the same key is safe), and the
					// next ones look the slot's master up afresh.
					cc.ReloadState(ctx)
				}
				mu.Lock()
				again, moved = append(again, retry...), moved || m
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(again) == 0 || attempt == durableAttempts {
			return out
		}
		slices.Sort(again)
		pending = again
		if moved {
			// The slot moved (a failover, a resharding): reload the
			// cluster's map and give it a moment before trying the master
			// it names. Nothing of these calls ran.
			if cc, ok := s.rdb.(*redis.ClusterClient); ok {
				cc.ReloadState(ctx)
			}
			t := time.NewTimer(time.Duration(attempt) * 25 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return out
			case <-t.C:
			}
		}
	}
	return out
}

// loadedKey names a script loaded on a master.
type loadedKey struct {
	node *redis.Client
	sc   *script
}

// loadOn loads sc on node unless the store did so before: a pipeline's
// call that found the script missing would cost its WAIT twice (the call
// is sent again, with a WAIT of its own), so the first durable call on
// each master loads the script first. A script lost since (a restart) is
// met by sending the call again. It returns the function to call sc by on
// node, or nil to send it with EVALSHA: the server has no functions, or
// refused the library (see functions.go).
func (s *Store) loadOn(ctx context.Context, node *redis.Client, sc *script) (string, error) {
	if fn, ok := s.loaded.Load(loadedKey{node, sc}); ok {
		return fn.(string), nil
	}
	fn := s.functionOf(sc)
	if fn != "" {
		if err := loadLibraryOn(ctx, node); err != nil {
			s.noteFunctionsErr(err)
			fn = ""
		}
	}
	if fn == "" {
		run := s.variant(sc)
		err := run.Load(ctx, node).Err()
		if run != sc.plain && sc.plain != nil && shebangUnsupported(err) {
			s.plain.Store(true)
			err = sc.plain.Load(ctx, node).Err()
		}
		if err != nil {
			return "", s.named(sc.name, scriptError(err))
		}
	}
	s.loaded.Store(loadedKey{node, sc}, fn)
	return fn, nil
}

// nodeCalls are the calls that go to one master.
type nodeCalls struct {
	node  *redis.Client
	calls []int
}

// durableNodes groups the pending calls by the master serving their slot,
// in the order of their first call: a *redis.Client is one master; a
// cluster's is the one its map names for the call's prefix.
func (s *Store) durableNodes(ctx context.Context, calls []durableCall, pending []int) ([]nodeCalls, error) {
	switch c := s.rdb.(type) {
	case *redis.Client:
		return []nodeCalls{{node: c, calls: pending}}, nil
	case *redis.ClusterClient:
		var groups []nodeCalls
		for _, i := range pending {
			m, err := c.MasterForKey(ctx, ackMarkKey(calls[i].prefix))
			if err != nil {
				return nil, fmt.Errorf("find the master of %q: %w", calls[i].prefix, err)
			}
			j := slices.IndexFunc(groups, func(g nodeCalls) bool { return g.node == m })
			if j < 0 {
				groups = append(groups, nodeCalls{node: m})
				j = len(groups) - 1
			}
			groups[j].calls = append(groups[j].calls, i)
		}
		return groups, nil
	}
	return nil, fmt.Errorf("redisstore: durable acknowledgement needs a single-node or cluster client, not a %T", s.rdb)
}

// pipeDurable sends the calls idx of sc (as function fn, unless "") to
// node in one pipeline, then an
// ack mark per slot and one WAIT (or WAITAOF), and sets each call's reply
// and level in out. It returns the calls that did not run and may be sent
// again (their script was not cached, or could not be compiled with its
// shebang; their slot moved), whether a slot moved, and whether the
// connection failed rather than Redis answering.
func (s *Store) pipeDurable(ctx context.Context, node *redis.Client, sc *script, fn string, calls []durableCall, idx []int, source []bool, d engine.Durability, out []callReply) (again []int, moved, broken bool) {
	pipe := node.Pipeline()
	cmds := make([]*redis.Cmd, len(idx))
	run := s.variant(sc)
	for j, i := range idx {
		switch {
		case source[i]:
			cmds[j] = run.Eval(ctx, pipe, calls[i].keys, calls[i].args...)
		case fn != "":
			cmds[j] = fcall(ctx, pipe, sc, fn, calls[i].keys, calls[i].args...)
		default:
			cmds[j] = run.EvalSha(ctx, pipe, calls[i].keys, calls[i].args...)
		}
	}
	var prefixes []string
	for _, i := range idx {
		if !slices.Contains(prefixes, calls[i].prefix) {
			prefixes = append(prefixes, calls[i].prefix)
		}
	}
	marks := make([]*redis.StatusCmd, len(prefixes))
	for j, p := range prefixes {
		marks[j] = pipe.Set(ctx, ackMarkKey(p), "1", ackMarkTTL)
	}
	timeout := waitTimeout(ctx, d.Timeout)
	var wait *redis.IntCmd
	var waitAOF *redis.IntSliceCmd
	if ms := timeout.Milliseconds(); d.LocalFsync {
		waitAOF = redis.NewIntSliceCmd(ctx, "waitaof", 1, d.Replicas, ms)
		_ = pipe.Process(ctx, waitAOF)
	} else {
		wait = redis.NewIntCmd(ctx, "wait", d.Replicas, ms)
		_ = pipe.Process(ctx, wait)
	}
	_, err := pipe.Exec(ctx) // each command carries its own reply or error
	var rerr redis.Error
	broken = err != nil && !errors.As(err, &rerr)

	ack := engine.Ack{Wanted: d}
	if wait != nil {
		n, err := wait.Result()
		ack.Replicas, ack.Err = int(n), err
	} else {
		v, err := waitAOF.Result()
		switch {
		case err != nil:
			ack.Err = err
		case len(v) != 2:
			ack.Err = fmt.Errorf("redisstore: WAITAOF replied %v", v)
		default:
			ack.LocalFsynced, ack.Replicas = v[0] >= 1, int(v[1])
		}
	}
	for j, i := range idx {
		v, err := cmds[j].Result()
		retry := true
		switch {
		case isNoScript(err):
			s.loaded.Delete(loadedKey{node, sc})
			source[i] = true
		case fn != "" && sc.refusedWhole(err):
			// Refused as a function where the script runs (see
			// functions.go): sent again as the script.
			source[i] = true
		case fn != "" && (isFunctionMissing(err) || functionsUnsupported(err)):
			// The call is sent again with the script's source, which runs
			// wherever it goes; the next durable call loads the library
			// again (or, without functions, the script).
			if functionsUnsupported(err) {
				s.noFunctions.Store(true)
			}
			s.loaded.Delete(loadedKey{node, sc})
			source[i] = true
		case run != sc.plain && sc.plain != nil && shebangUnsupported(err):
			s.plain.Store(true)
		case isRedirect(err):
			moved = true
		default:
			retry = false
		}
		if retry {
			again = append(again, i)
			out[i] = callReply{err: s.named(sc.name, scriptError(err))} // if no attempt is left
			continue
		}
		a := ack
		if merr := marks[slices.Index(prefixes, calls[i].prefix)].Err(); merr != nil && a.Err == nil {
			a.Err = fmt.Errorf("write the ack mark before WAIT: %w", s.named("ack mark", scriptError(merr)))
		}
		out[i] = callReply{v: v, err: s.named(sc.name, scriptError(err)), ack: a}
	}
	return again, moved, broken
}

// waitTimeout is WAIT's timeout for a call bounded by ctx: d, shortened to
// end waitMargin before ctx's deadline, and at least 1ms (0 would wait
// for ever).
func waitTimeout(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)-waitMargin)
	}
	return max(d, time.Millisecond)
}

// isRedirect reports whether err says a cluster node did not run a command
// because another node serves its slot, or will shortly: MOVED, ASK
// (a slot being migrated) or TRYAGAIN (a multi-key call during one).
func isRedirect(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ") || strings.HasPrefix(msg, "TRYAGAIN")
}
