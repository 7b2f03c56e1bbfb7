package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// enqueueScript triggers runs: lua/enqueue.lua.
var enqueueScript = loadScript("enqueue")

// scheduled reports whether any of ps asks to run later.
func scheduled(ps []*engine.EnqueueParams) bool {
	return slices.ContainsFunc(ps, func(p *engine.EnqueueParams) bool { return p.Delay > 0 })
}

// appendDelays appends, after the last trigger's ARGV, the delay of each
// of ps, as enqueue.lua reads them when a call carries them: in whole
// milliseconds from the trigger's Now as the script reads it, so that the
// due time is Now + Delay to the millisecond.
func appendDelays(args []any, ps []*engine.EnqueueParams) []any {
	for _, p := range ps {
		args = append(args, max(unixMS(p.Now.Add(p.Delay))-unixMS(p.Now), 0))
	}
	return args
}

// prioritized reports whether any of ps has a priority above the default.
func prioritized(ps []*engine.EnqueueParams) bool {
	return slices.ContainsFunc(ps, func(p *engine.EnqueueParams) bool { return p.Priority > engine.PriorityDefault })
}

// priorityAbove is p when it is above the default, else 0.
func priorityAbove(p int) int {
	if p > engine.PriorityDefault {
		return p
	}
	return 0
}

// appendPriorities appends, after the delays (appendDelays), the priority
// of each of ps, as enqueue.lua reads them when a call carries them.
func appendPriorities(args []any, ps []*engine.EnqueueParams) []any {
	for _, p := range ps {
		args = append(args, max(p.Priority, engine.PriorityDefault))
	}
	return args
}

// appendEnqueue appends one trigger's ARGV, in the layout of
// enqueue.lua, to args (which must start with the script's header,
// enqueueHeader). Its keys the script builds from the prefix.
func appendEnqueue(args []any, p *engine.EnqueueParams) []any {
	strat := p.Strategy
	if strat == "" {
		strat = engine.StrategyNone
	}
	// A run without metadata sends the constant, which costs no allocation
	// to pass (the script writes no field for it).
	var meta any = noMeta
	if len(p.Meta) > 0 && string(p.Meta) != noMeta {
		meta = p.Meta
	}
	policy := p.Policy
	if policy == "" {
		policy = engine.PolicyReject
	}
	maxSignals := p.MaxSignals
	if maxSignals == 0 {
		maxSignals = engine.MaxSignalsDefault
	}
	a := [enqueueItemArgCount]any{
		enqueueItemArgRunID:          p.RunID,
		enqueueItemArgTask:           p.Task,
		enqueueItemArgInput:          p.Input,
		enqueueItemArgMeta:           meta,
		enqueueItemArgIdempotencyKey: p.Key,
		enqueueItemArgSpec: settingsSpec(strat, ms(p.Hold), p.Retries, ms(p.Timeout), unixMS(p.Now), p.MaxDeliveries,
			ms(p.Retain), ms(p.Retention)),
		enqueueItemArgNow:    unixMS(p.Now),
		enqueueItemArgPolicy: policyArg(policy, maxSignals, p.SignalID),
		enqueueItemArgDigest: engine.InputDigest(p.Input),
	}
	return append(args, a[:]...)
}

// policyArg is a trigger's policy as enqueue.lua takes it: the policy, or
// for PolicySignal "signal <max signals> <signal id>", so that the two
// values only that policy uses cost other triggers no argument.
func policyArg(policy engine.Policy, maxSignals int, signalID string) string {
	if policy != engine.PolicySignal {
		return string(policy)
	}
	return string(policy) + " " + strconv.Itoa(maxSignals) + " " + signalID
}

// enqueueHeader is the KEYS and ARGV every call of enqueue.lua in the
// partition of ks starts with, with room for n triggers; suppressedCap is
// the partition's (Store.suppressedCap), source the triggers' (one for
// the call: see EnqueueBatch).
func enqueueHeader(ks Keys, n int, suppressedCap, source string) ([]string, []any) {
	a := [1 + enqueueArgCount]any{
		enqueueArgPrefix:        ks.Prefix(),
		enqueueArgGroup:         GroupName,
		enqueueArgSuppressedCap: suppressedCap,
		enqueueArgSource:        sourceOf(source),
		enqueueArgTriggers:      n,
	}
	k := [1 + enqueueKeyCount]string{enqueueKeyRuns: ks.Runs()}
	// One more ARGV per trigger than a call without delays needs: room
	// for them.
	return k[1:], append(make([]any, 0, enqueueArgCount+(enqueueItemArgCount+1)*n), a[1:]...)
}

// enqueueCreatedSuperseding is the code enqueue.lua answers a trigger
// that created its run by superseding the key's owner with (its entry and
// the old owner follow); EnqueueReplies gives it as TriggerCreated.
const enqueueCreatedSuperseding = 5

// enqueueReplyValues is how many values follow each code in enqueue.lua's
// flat reply.
var enqueueReplyValues = map[int64]int{
	int64(engine.TriggerRejected): 2, int64(engine.TriggerCreated): 1, int64(engine.TriggerAttached): 1, int64(engine.TriggerSignalled): 2,
	int64(engine.TriggerDebounced): 1, enqueueCreatedSuperseding: 2,
}

// enqueueReply cuts the first trigger's reply from flat, the rest of a
// call's reply: the trigger's error, or {code, values...} with code a
// TriggerOutcome (a superseding creation as {TriggerCreated, entry, old
// owner}); n is how many values of flat it took.
func enqueueReply(flat []any) (item []any, n int) {
	if len(flat) == 0 {
		return nil, 0
	}
	if _, ok := flat[0].(error); ok {
		return flat[:1], 1
	}
	code := asInt(flat[0])
	n = min(1+enqueueReplyValues[code], len(flat))
	if code == enqueueCreatedSuperseding {
		return append([]any{int64(engine.TriggerCreated)}, flat[1:n]...), n
	}
	return flat[:n], n
}

// EnqueueReplies cuts the reply of a call of enqueue.lua into one reply
// per trigger, as enqueueReply gives them. Tools that watch the calls
// the store makes (internal/history) read replies here.
func EnqueueReplies(flat []any) []any {
	var out []any
	for len(flat) > 0 {
		item, n := enqueueReply(flat)
		var v any = item
		if err, ok := item[0].(error); ok {
			v = err
		}
		out, flat = append(out, v), flat[n:]
	}
	return out
}

// parseEnqueue reads one trigger's reply, as enqueueReply cuts it.
func (s *Store) parseEnqueue(r []any) (engine.EnqueueResult, error) {
	if len(r) > 0 {
		if err, ok := r[0].(error); ok {
			return engine.EnqueueResult{}, s.named("enqueue", scriptError(err))
		}
	}
	if len(r) < 2 {
		return engine.EnqueueResult{}, fmt.Errorf("redisstore: enqueue: unexpected reply %v", r)
	}
	res := engine.EnqueueResult{Outcome: engine.TriggerOutcome(asInt(r[0]))}
	switch res.Outcome {
	case engine.TriggerCreated:
		res.Accepted, res.EntryID = true, asString(r[1])
		if len(r) > 2 {
			res.Superseded = asString(r[2])
		}
	case engine.TriggerRejected:
		res.Owner = asString(r[1])
		if len(r) > 2 {
			if t := asInt(r[2]); t > 0 {
				res.OwnerTTL = time.Duration(t) * time.Millisecond
			}
		}
	case engine.TriggerSignalled:
		res.Owner = asString(r[1])
		if len(r) > 2 {
			res.SignalID = asString(r[2])
		}
	default:
		res.Owner = asString(r[1])
	}
	return res, nil
}

// Enqueue claims the key, creates the run and queues it in one script.
func (s *Store) Enqueue(ctx context.Context, p *engine.EnqueueParams) (engine.EnqueueResult, error) {
	res, errs := s.EnqueueBatch(ctx, []*engine.EnqueueParams{p})
	return res[0], errs[0]
}

// EnqueueBatch sends the triggers to the enqueue script, one call per
// partition (and per MaxItemsPerCall triggers), each call handling its
// triggers in order, so a later trigger of a key collides with an earlier
// one of the same batch (a key's triggers are all in its partition).
// Triggers of different sources, or that wait for different durability,
// never share a call. The i-th result and error belong to the i-th
// trigger, and are what Enqueue would have returned for it alone. Each
// trigger's RunID is made to name its run's partition first (the
// partition of its key, or one its ID hashes to): the caller reads the
// run's ID from it afterwards.
func (s *Store) EnqueueBatch(ctx context.Context, ps []*engine.EnqueueParams) ([]engine.EnqueueResult, []error) {
	return runBatch(ctx, s, batchOp[*engine.EnqueueParams, engine.EnqueueResult]{
		script: enqueueScript,
		part:   func(parts *Partitions, p *engine.EnqueueParams) (int, error) { return parts.place(p), nil },
		split:  func(p *engine.EnqueueParams) string { return sourceOf(p.Source) }, // never ""
		call: func(ks Keys, items []*engine.EnqueueParams) ([]string, []any) {
			keys, args := enqueueHeader(ks, len(items), s.suppressedCap(), items[0].Source)
			for _, p := range items {
				args = appendEnqueue(args, p)
			}
			if prio := prioritized(items); prio || scheduled(items) {
				args = appendDelays(args, items)
				if prio {
					args = appendPriorities(args, items)
				}
			}
			return keys, args
		},
		reply: func(_ *engine.EnqueueParams, r []any) (engine.EnqueueResult, int, error) {
			item, n := enqueueReply(r)
			res, err := s.parseEnqueue(item)
			return res, max(n, 1), err
		},
		durability: func(p *engine.EnqueueParams) engine.Durability { return p.Durability },
		acked:      func(r *engine.EnqueueResult, a engine.Ack) { r.Ack = &a },
	}, ps)
}

// PlaceRuns sets each trigger's RunID to the ID EnqueueBatch gives its
// run: its idempotency key's partition, or for a run without a key the one
// its plain ID hashes to (Partitions.place).
func (s *Store) PlaceRuns(ctx context.Context, ps []*engine.EnqueueParams) error {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return err
	}
	for _, p := range ps {
		parts.place(p)
	}
	return nil
}

// EnqueueCall returns the KEYS and ARGV that Enqueue sends to the enqueue
// script for p alone, so a baseline can send precisely the same work. The
// script replies with an array holding p's one reply. It places p as
// EnqueueBatch does, in the layout Partitions read (one partition before
// that).
func (s *Store) EnqueueCall(p *engine.EnqueueParams) (keys []string, args []any) {
	parts := s.KnownPartitions()
	if parts == nil {
		parts = NewPartitions(s.keys.ns, 1)
	}
	ks := parts.Keys(parts.place(p))
	keys, args = enqueueHeader(ks, 1, s.suppressedCap(), p.Source)
	return keys, appendEnqueue(args, p)
}
