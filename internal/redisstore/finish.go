package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/taskq/taskq/internal/engine"
)

// finishScript records outcomes of attempts: lua/finish.lua.
var finishScript = loadScript("finish")

func (s *Store) parseWritten(name string, v any) (engine.FinishResult, error) {
	if err, ok := v.(error); ok {
		return engine.FinishResult{}, s.named(name, scriptError(err))
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return engine.FinishResult{}, fmt.Errorf("redisstore: %s: unexpected reply %v", name, v)
	}
	return s.parseWrittenValues(name, r)
}

// parseWrittenValues reads a {written, status or reason} reply from its
// first two values.
func (s *Store) parseWrittenValues(name string, r []any) (engine.FinishResult, error) {
	if len(r) < 2 {
		return engine.FinishResult{}, fmt.Errorf("redisstore: %s: unexpected reply %v", name, r)
	}
	if err, ok := r[0].(error); ok {
		return engine.FinishResult{}, s.named(name, scriptError(err))
	}
	return engine.FinishResult{Written: asInt(r[0]) == 1, Status: asString(r[1])}, nil
}

// Finish records an attempt's outcome, fenced by its attempt number.
func (s *Store) Finish(ctx context.Context, p *engine.FinishParams) (engine.FinishResult, error) {
	res, errs := s.FinishBatch(ctx, []*engine.FinishParams{p})
	return res[0], errs[0]
}

// FinishBatch records many outcomes in one call of the finish script per
// partition (or more, past MaxItemsPerCall). A call names one worker for
// the attempts it begins: a worker sends its own outcomes together, so
// only a batch of several workers' begun attempts is split, and outcomes
// that begin nothing go along with any call. The i-th result and error
// belong to the i-th outcome.
func (s *Store) FinishBatch(ctx context.Context, ps []*engine.FinishParams) ([]engine.FinishResult, []error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return runBatch(ctx, s, batchOp[*engine.FinishParams, engine.FinishResult]{
		script: finishScript,
		part: func(parts *Partitions, p *engine.FinishParams) (int, error) {
			switch p.Outcome {
			case engine.OutcomeSucceeded, engine.OutcomeFailed, engine.OutcomeRetry, engine.OutcomeWait:
				return runPartition(parts, p.RunID)
			}
			return 0, fmt.Errorf("redisstore: finish %s: outcome %q is none of %s, %s, %s and %s", p.RunID, p.Outcome,
				engine.OutcomeSucceeded, engine.OutcomeFailed, engine.OutcomeRetry, engine.OutcomeWait)
		},
		split: beganBy,
		call:  finishCall,
		reply: func(_ *engine.FinishParams, r []any) (engine.FinishResult, int, error) {
			res, err := s.parseWrittenValues("finish", r)
			return res, 2, err
		},
	}, ps)
}

// beganBy is the worker an outcome's attempt is begun by in the finish
// call ("" when it is not begun there).
func beganBy(p *engine.FinishParams) string {
	if p.Began.IsZero() || !withDelivery(p) {
		return ""
	}
	return p.Consumer
}

// finishCall returns the KEYS and ARGV of a finish call of ps, in
// partition ks, whose attempts begun in the call are all begun by one
// worker.
func finishCall(ks Keys, ps []*engine.FinishParams) ([]string, []any) {
	consumer := ""
	for _, p := range ps {
		if consumer = beganBy(p); consumer != "" {
			break
		}
	}
	ha := [1 + finishArgCount]any{finishArgGroup: GroupName, finishArgPrefix: ks.Prefix(), finishArgConsumer: consumer}
	args := append(make([]any, 0, finishArgCount+finishItemArgCount*len(ps)), ha[1:]...)
	for _, p := range ps {
		outcome := string(p.Outcome)
		switch {
		case p.Outcome == engine.OutcomeWait && p.RetryAt.IsZero():
			outcome += " +inf" // a wait without a timeout: only a signal wakes it
		case p.Outcome == engine.OutcomeRetry || p.Outcome == engine.OutcomeWait:
			outcome += " " + strconv.FormatInt(unixMS(p.RetryAt), 10)
		}
		a := [finishItemArgCount]any{
			finishItemArgRunID:   p.RunID,
			finishItemArgAttempt: p.Attempt,
			finishItemArgOutcome: outcome,
			finishItemArgPayload: p.Payload,
			finishItemArgNow:     unixMS(p.Now),
			// Without the delivery's fields the script reads them from
			// the record.
			finishItemArgTask: "", finishItemArgEntry: "", finishItemArgIdempotencyKey: "",
			finishItemArgRetain: 0, finishItemArgRetention: 0, finishItemArgBegan: "",
		}
		if withDelivery(p) {
			sp := p.Spec
			a[finishItemArgTask], a[finishItemArgEntry] = laneName(p.Task, p.Priority), p.EntryID
			if sp.Strategy == engine.StrategyStatus {
				a[finishItemArgIdempotencyKey] = sp.Key
			}
			a[finishItemArgRetain], a[finishItemArgRetention] = ms(sp.Retain), ms(sp.Retention)
			if !p.Began.IsZero() {
				a[finishItemArgBegan] = unixMS(p.Began)
			}
		}
		args = append(args, a[:]...)
	}
	return []string{ks.Retry()}, args
}

// withDelivery says the outcome carries its delivery, so finish.lua begins the attempt too.
func withDelivery(p *engine.FinishParams) bool {
	return p.Spec != nil && p.Task != "" && p.EntryID != ""
}
