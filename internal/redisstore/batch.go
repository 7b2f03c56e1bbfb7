package redisstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/taskq/taskq/internal/engine"
)

// batchOp declares a batch operation: a script that takes many items in
// one call and replies with one flat array holding each item's values in
// order. runBatch owns the rest: routing each item to its partition,
// keeping apart the items the operation says may not share a call,
// chunking to MaxItemsPerCall, one pipeline for the calls, and handing
// each item its part of the reply. See CONTRIBUTING.md for a worked
// example.
type batchOp[P, R any] struct {
	script *script
	// part returns the partition item p goes to; an error fails p alone.
	part func(parts *Partitions, p P) (int, error)
	// split, when set, names what the items of one call must share besides
	// their partition (the worker that begins their attempts, say); an
	// item it names "" goes with any. Nil when any items of a partition
	// may share a call.
	split func(p P) string
	// call returns the KEYS and ARGV of one call carrying items, all of
	// partition ks and of one split.
	call func(ks Keys, items []P) ([]string, []any)
	// reply reads item p's result from r, the rest of the call's reply,
	// and returns how many values of r it used.
	reply func(p P, r []any) (R, int, error)
	// durability, when set, is the acknowledgement item p waits for
	// (none, or one level): items that wait for different ones never
	// share a call, and the calls whose items wait go out durably (see
	// evalBatchDurable). acked then records how far an item's write
	// reached on its result.
	durability func(p P) engine.Durability
	acked      func(r *R, a engine.Ack)
}

// runBatch runs op for items. The i-th result and error belong to the
// i-th item.
func runBatch[P, R any](ctx context.Context, s *Store, op batchOp[P, R], items []P) ([]R, []error) {
	res, errs := make([]R, len(items)), make([]error, len(items))
	if len(items) == 0 {
		return res, errs
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return res, fillErr(errs, err)
	}
	part := make([]int, len(items))
	groups := groupByPartition(len(items), parts.Count(), func(i int) (int, error) {
		p, err := op.part(parts, items[i])
		part[i] = p
		return p, err
	}, errs)
	// The common batch needs no split and waits for no acknowledgement:
	// it costs no more than grouping by partition.
	if op.split != nil && !alike(len(items), func(i int) string { return op.split(items[i]) }) {
		groups = splitGroups(groups, func(i int) string { return op.split(items[i]) })
	}
	build := func(idx []int) ([]string, []any) {
		sub := make([]P, len(idx))
		for k, i := range idx {
			sub[k] = items[i]
		}
		return op.call(parts.Keys(part[idx[0]]), sub)
	}
	parse := func(i int, r []any) (int, error) {
		v, n, err := op.reply(items[i], r)
		res[i] = v
		return n, err
	}
	if op.durability == nil || !slices.ContainsFunc(items, func(p P) bool { return engine.Durable(op.durability(p)) }) {
		keepFirst(errs, s.evalBatch(ctx, op.script, groups, len(items), build, parse))
		return res, errs
	}
	// One pass per level asked for: the calls of a level share its WAIT.
	level := func(i int) engine.Durability {
		if d := op.durability(items[i]); engine.Durable(d) {
			return engine.WithDefaults(d)
		}
		return engine.Durability{}
	}
	byLevel := map[engine.Durability][][]int{}
	var levels []engine.Durability
	for _, g := range splitGroups(groups, func(i int) string { return fmt.Sprint(level(i)) }) {
		d := level(g[0])
		if _, ok := byLevel[d]; !ok {
			levels = append(levels, d)
		}
		byLevel[d] = append(byLevel[d], g)
	}
	for _, d := range levels {
		if !engine.Durable(d) {
			keepFirst(errs, s.evalBatch(ctx, op.script, byLevel[d], len(items), build, parse))
			continue
		}
		sent, acks := s.evalBatchDurable(ctx, op.script, byLevel[d], len(items), d, build, parse)
		keepFirst(errs, sent)
		for _, g := range byLevel[d] {
			for _, i := range g {
				if errs[i] == nil {
					op.acked(&res[i], acks[i])
				}
			}
		}
	}
	return res, errs
}

// alike reports whether key gives every one of n items the same value
// ("" counting as any).
func alike(n int, key func(i int) string) bool {
	first := ""
	for i := range n {
		switch k := key(i); {
		case k == "" || k == first:
		case first == "":
			first = k
		default:
			return false
		}
	}
	return true
}

// splitGroups splits each group by key, in the order each key first
// appears in it; an item keyed "" goes with the group's first key.
func splitGroups(groups [][]int, key func(i int) string) [][]int {
	var out [][]int
	for _, g := range groups {
		first := ""
		for _, i := range g {
			if first = key(i); first != "" {
				break
			}
		}
		at := map[string]int{}
		for _, i := range g {
			k := key(i)
			if k == "" {
				k = first
			}
			j, ok := at[k]
			if !ok {
				j = len(out)
				at[k] = j
				out = append(out, nil)
			}
			out[j] = append(out[j], i)
		}
	}
	return out
}

// itemsCall builds the KEYS and ARGV of a call: the header's, headKeys
// and head, then those item appends for each of items. item appends to
// the call's slices rather than returning its own, which would cost two
// allocations per item.
func itemsCall[P any](headKeys []string, head []any, items []P, item func(p P, keys []string, args []any) ([]string, []any)) ([]string, []any) {
	keys := append(make([]string, 0, len(headKeys)+4*len(items)), headKeys...)
	args := append(make([]any, 0, len(head)+8*len(items)), head...)
	for _, p := range items {
		keys, args = item(p, keys, args)
	}
	return keys, args
}
