package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// takeFanoutsScript takes over pending fan-outs for a recoverer:
// lua/take_fanouts.lua.
var takeFanoutsScript = loadScript("take_fanouts")

// takeFanouts takes up to limit fan-outs of the partition under prefix
// pending since cutoff or before, and returns them to be finished. One
// whose pending fan-out cannot be read is left out, with an error; the
// others are returned with it.
func (s *Store) takeFanouts(ctx context.Context, prefix string, cutoff, now time.Time, limit int) ([]*fanoutJob, error) {
	k := s.keys.under(prefix)
	keys := [1 + takeFanoutsKeyCount]string{takeFanoutsKeyFanouts: k.Fanouts()}
	args := [1 + takeFanoutsArgCount]any{
		takeFanoutsArgCutoff:      unixMS(cutoff),
		takeFanoutsArgNow:         unixMS(now),
		takeFanoutsArgLimit:       limit,
		takeFanoutsArgEventPrefix: k.Event(""),
	}
	v, err := s.runScript(ctx, takeFanoutsScript, keys[1:], args[1:]...)
	if err != nil {
		return nil, err
	}
	r, err := asSlice(v)
	if err != nil || len(r)%5 != 0 {
		return nil, fmt.Errorf("redisstore: take_fanouts: unexpected reply %v", v)
	}
	jobs := make([]*fanoutJob, 0, len(r)/5)
	var errs []error
	for i := 0; i < len(r); i += 5 {
		j, err := jobOf(prefix, asString(r[i]), asString(r[i+1]), asString(r[i+2]), asString(r[i+3]), asString(r[i+4]))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, errors.Join(errs...)
}
