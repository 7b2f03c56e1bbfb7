package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// takeCascadesScript takes over pending cascades: lua/take_cascades.lua.
var takeCascadesScript = loadScript("take_cascades")

// cascadeJob is a pending cascade a recoverer took: the cancelled run and
// when it ended.
type cascadeJob struct {
	runID string
	ended time.Time
}

// takeCascades takes the cascades of every partition of parts whose time
// is at or before cutoff, up to limit per partition, giving them the time
// now: one call per partition, all in one pipeline.
func (s *Store) takeCascades(ctx context.Context, parts *Partitions, cutoff, now time.Time, limit int) ([]cascadeJob, error) {
	calls := make([]scriptCall, parts.Count())
	for i := range calls {
		ks := parts.Keys(i)
		keys := [1 + takeCascadesKeyCount]string{takeCascadesKeyCascades: ks.Cascades()}
		args := [1 + takeCascadesArgCount]any{
			takeCascadesArgCutoff: unixMS(cutoff),
			takeCascadesArgNow:    unixMS(now),
			takeCascadesArgLimit:  limit,
			takeCascadesArgPrefix: ks.Prefix(),
		}
		calls[i] = scriptCall{Keys: keys[1:], Args: args[1:]}
	}
	s.runScripts(ctx, takeCascadesScript, calls)
	var jobs []cascadeJob
	var errs []error
	for _, c := range calls {
		if c.Err != nil {
			errs = append(errs, c.Err)
			continue
		}
		r, err := asSlice(c.Reply)
		if err != nil || len(r)%2 != 0 {
			errs = append(errs, fmt.Errorf("redisstore: take_cascades: unexpected reply %v", c.Reply))
			continue
		}
		for i := 0; i < len(r); i += 2 {
			jobs = append(jobs, cascadeJob{runID: asString(r[i]), ended: fromMS(asInt(r[i+1]))})
		}
	}
	return jobs, errors.Join(errs...)
}
