package redisstore

import (
	"context"
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

// takeCascades takes the cascades of partition ks whose time is at or
// before cutoff, giving them the time now.
func (s *Store) takeCascades(ctx context.Context, ks Keys, cutoff, now time.Time, limit int) ([]cascadeJob, error) {
	keys := [1 + takeCascadesKeyCount]string{takeCascadesKeyCascades: ks.Cascades()}
	args := [1 + takeCascadesArgCount]any{
		takeCascadesArgCutoff: unixMS(cutoff),
		takeCascadesArgNow:    unixMS(now),
		takeCascadesArgLimit:  limit,
		takeCascadesArgPrefix: ks.Prefix(),
	}
	v, err := s.runScript(ctx, takeCascadesScript, keys[1:], args[1:]...)
	if err != nil {
		return nil, err
	}
	r, err := asSlice(v)
	if err != nil || len(r)%2 != 0 {
		return nil, fmt.Errorf("redisstore: take_cascades: unexpected reply %v", v)
	}
	jobs := make([]cascadeJob, 0, len(r)/2)
	for i := 0; i < len(r); i += 2 {
		jobs = append(jobs, cascadeJob{runID: asString(r[i]), ended: fromMS(asInt(r[i+1]))})
	}
	return jobs, nil
}
