package redisstore

import (
	"context"
	"errors"
	"slices"

	"github.com/taskq/taskq/internal/engine"
)

// forgetWaitersScript forgets registrations that are as read:
// lua/forget_waiters.lua.
var forgetWaitersScript = loadScript("forget_waiters")

// ForgetEventWaiters removes the registrations ws that are still as read,
// in calls of at most maxForget, and drops event keys left without
// registrations from the index a recoverer looks through. A waiter with
// no RunID only drops its key when that has no registrations.
func (s *Store) ForgetEventWaiters(ctx context.Context, ws []engine.EventWaiter) error {
	if len(ws) == 0 {
		return nil
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return err
	}
	ks := parts.Keys(0)
	var calls []scriptCall
	for chunk := range slices.Chunk(ws, maxForget) {
		k := [1 + forgetWaitersKeyCount]string{forgetWaitersKeyIndex: ks.EventWaits()}
		keys, args := itemsCall(k[1:], nil, chunk, func(w engine.EventWaiter, keys []string, args []any) ([]string, []any) {
			k := [forgetWaitersItemKeyCount]string{forgetWaitersItemKeyWaiters: ks.EventWaiters(w.EventKey)}
			a := [forgetWaitersItemArgCount]any{
				forgetWaitersItemArgEventKey:     w.EventKey,
				forgetWaitersItemArgRunID:        w.RunID,
				forgetWaitersItemArgRegistration: w.Registration,
			}
			return append(keys, k[:]...), append(args, a[:]...)
		})
		calls = append(calls, scriptCall{Keys: keys, Args: args})
	}
	s.runScripts(ctx, forgetWaitersScript, calls)
	var errs []error
	for _, c := range calls {
		if c.Err != nil {
			errs = append(errs, c.Err) // named by runScripts
		} else if err, ok := c.Reply.(error); ok {
			errs = append(errs, s.named("forget_waiters", scriptError(err)))
		}
	}
	return errors.Join(errs...)
}

// maxForget bounds the registrations of one forget_waiters call.
const maxForget = 500
