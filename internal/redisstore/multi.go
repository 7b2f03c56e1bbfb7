package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Several calls in one. On a Redis Cluster a batch is one script call per
// partition it touches (each partition is one slot), and a master that
// serves several partitions would pay a call's fixed cost (the FCALL's
// dispatch, its arguments' conversion, its reply) once per partition. So
// where the store calls functions, the calls of a batch that go to one
// master go out as one call of the script's multi function, flagged
// allow-cross-slot-keys, which runs the script's body once per call (see
// lua/lib/multi.lua): Redis routes it by one key of its first call and
// lets it reach the keys of every slot the node serves. Each call's reply
// comes back in order, as if it had been sent alone.
//
// The function checks first that every call's slot is its node's, and
// answers TASKQ_NOTLOCAL before writing anything when one is not (a
// failover or a slot migration moved it since the client read the slot
// map). That answer, and every other that says the call did not run
// (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, a missing library, a server without
// functions, a refusal at maxmemory or on a replica), makes the store send
// the calls one by one as it does without the multi function.

// multiPrefix prefixes the error of one call in a multi function's reply.
const multiPrefix = "TASKQ_CALL "

// multiGroups returns calls grouped as they go out: the indexes of the
// calls each multi call carries (at least two, of one master, together at
// most MaxItemsPerCall items), or of one call sent alone. Nil when every
// call goes alone: not on a cluster, a server without functions.
func (s *Store) multiGroups(ctx context.Context, sc *script, calls []scriptCall) [][]int {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok || sc.multiFn == "" || s.functionOf(sc) == "" {
		return nil
	}
	var (
		groups [][]int
		open   = map[*redis.Client]int{} // the group of a master still taking calls
		items  = map[*redis.Client]int{}
	)
	for i, c := range calls {
		if len(c.Keys) == 0 {
			groups = append(groups, []int{i})
			continue
		}
		m, err := cc.MasterForKey(ctx, c.Keys[0])
		if err != nil {
			return nil
		}
		n := max(c.Items, 1)
		if g, ok := open[m]; ok && items[m]+n <= MaxItemsPerCall {
			groups[g] = append(groups[g], i)
			items[m] += n
			continue
		}
		open[m], items[m] = len(groups), n
		groups = append(groups, []int{i})
	}
	if len(groups) == len(calls) {
		return nil
	}
	return groups
}

// multiArgs packs calls into the KEYS and ARGV of one call of a multi
// function (see lua/lib/multi.lua).
func multiArgs(calls []scriptCall, idx []int) ([]string, []any) {
	n := 1
	for _, i := range idx {
		n += 2 + len(calls[i].Keys) + len(calls[i].Args)
	}
	args := make([]any, 0, n)
	args = append(args, len(idx))
	for _, i := range idx {
		c := calls[i]
		args = append(args, len(c.Keys), len(c.Args))
		for _, k := range c.Keys {
			args = append(args, k)
		}
		args = append(args, c.Args...)
	}
	return calls[idx[0]].Keys[:1], args
}

// multiCmd queues on p the call of sc's multi function carrying calls idx.
func multiCmd(ctx context.Context, p redis.Pipeliner, sc *script, calls []scriptCall, idx []int) *redis.Cmd {
	keys, args := multiArgs(calls, idx)
	return fcall(ctx, p, sc, sc.multiFn, keys, args...)
}

// multiReplies hands each call of idx its part of v, the reply of the
// multi call that carried them. It returns false when the multi call did
// not run (err says so), for the calls to be sent one by one.
func (s *Store) multiReplies(ctx context.Context, sc *script, calls []scriptCall, idx []int, v any, err error) bool {
	if err != nil {
		if multiNotRun(err) {
			if cc, ok := s.rdb.(*redis.ClusterClient); ok && strings.HasPrefix(err.Error(), "TASKQ_NOTLOCAL") {
				cc.ReloadState(ctx)
			}
			return false
		}
		for _, i := range idx {
			calls[i].Err = s.named(sc.name, scriptError(err))
		}
		return true
	}
	r, ok := v.([]any)
	if !ok || len(r) != len(idx) {
		err := fmt.Errorf("redisstore: %s: a reply of %d calls for %d", sc.name, len(r), len(idx))
		for _, i := range idx {
			calls[i].Err = s.named(sc.name, err)
		}
		return true
	}
	for k, i := range idx {
		c := &calls[i]
		if e, ok := r[k].(error); ok {
			c.Err = s.named(sc.name, scriptError(MultiCallError(e)))
			continue
		}
		c.Reply = r[k]
	}
	return true
}

// multiNotRun reports whether err, the error of a multi call, says the
// call did not run: nothing of it was written.
func multiNotRun(err error) bool {
	msg := err.Error()
	for _, p := range []string{"TASKQ_NOTLOCAL ", "MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "CROSSSLOT", "OOM ", "READONLY "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return isFunctionMissing(err) || functionsUnsupported(err)
}

// SplitMulti returns the calls a call of a multi function carries, given
// the arguments of the FCALL that sent it: each as the arguments of an
// FCALL of the script's function on its own, as a store not on a cluster
// sends it; and false when args are not a multi function's call. Tools
// that observe the commands a Store sends (the history recorder of the
// fault tests) use it to see each call. A reply of the multi call holds
// each call's reply in order, an error one as an error whose message
// MultiCallError reads.
func SplitMulti(args []any) ([][]any, bool) {
	if len(args) < 4 || !strings.EqualFold(fmt.Sprint(args[0]), "fcall") && !strings.EqualFold(fmt.Sprint(args[0]), "fcall_ro") {
		return nil, false
	}
	var fn string
	for _, sc := range allScripts {
		if sc.multiFn == fmt.Sprint(args[1]) {
			fn = sc.fn
			if sc.shardedFn != "" {
				fn = sc.shardedFn
			}
		}
	}
	nkeys, err := strconv.Atoi(fmt.Sprint(args[2]))
	if fn == "" || err != nil || len(args) < 4+nkeys {
		return nil, false
	}
	packed := args[3+nkeys:]
	num := func(i int) (int, bool) {
		if i >= len(packed) {
			return 0, false
		}
		n, err := strconv.Atoi(fmt.Sprint(packed[i]))
		return n, err == nil && n >= 0
	}
	n, ok := num(0)
	if !ok {
		return nil, false
	}
	out := make([][]any, 0, n)
	at := 1
	for range n {
		nk, ok1 := num(at)
		na, ok2 := num(at + 1)
		if !ok1 || !ok2 || at+2+nk+na > len(packed) {
			return nil, false
		}
		call := append([]any{args[0], fn, nk}, packed[at+2:at+2+nk+na]...)
		out = append(out, call)
		at += 2 + nk + na
	}
	return out, true
}

// MultiCallError returns the error of one call in a multi function's
// reply as the call would have answered on its own.
func MultiCallError(err error) error {
	msg, ok := strings.CutPrefix(err.Error(), multiPrefix)
	if !ok {
		return err
	}
	return callError(msg)
}

// callError is a script's error reply carried in a multi call's reply.
type callError string

func (e callError) Error() string { return string(e) }

// RedisError marks it as a reply of Redis, as go-redis's own are.
func (e callError) RedisError() {}
