package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// takeParkedScript takes parked runs for a recoverer: lua/take_parked.lua.
var takeParkedScript = loadScript("take_parked")

// TakeParked takes up to limit parked runs of partition part due at or
// before now, each due again at next.
func (s *Store) TakeParked(ctx context.Context, part int, now, next time.Time, limit int) ([]engine.ParkedRun, error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return nil, err
	}
	k := [1 + takeParkedKeyCount]string{takeParkedKeyParked: ks.Parked()}
	a := [1 + takeParkedArgCount]any{
		takeParkedArgNow: unixMS(now), takeParkedArgNext: unixMS(next), takeParkedArgLimit: limit, takeParkedArgPrefix: ks.Prefix(),
	}
	v, err := s.runScript(ctx, takeParkedScript, k[1:], a[1:]...)
	if err != nil {
		return nil, err
	}
	r, err := asSlice(v)
	if err != nil || len(r)%4 != 0 {
		return nil, fmt.Errorf("redisstore: take_parked: unexpected reply %v", v)
	}
	out := make([]engine.ParkedRun, 0, len(r)/4)
	for j := 0; j+3 < len(r); j += 4 {
		out = append(out, engine.ParkedRun{RunID: asString(r[j]), Task: asString(r[j+1]), Group: asString(r[j+2]), Index: int(asInt(r[j+3]))})
	}
	return out, nil
}
