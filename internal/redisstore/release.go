package redisstore

import "context"

// releaseScript frees an idempotency key its expected owner holds:
// lua/release.lua.
var releaseScript = loadScript("release")

// ReleaseKey frees key only if owner still holds it.
func (s *Store) ReleaseKey(ctx context.Context, key, owner string) (bool, error) {
	ks, err := s.keysOfKey(ctx, key)
	if err != nil {
		return false, err
	}
	k := [1 + releaseKeyCount]string{releaseKeyIdempotency: ks.IdempotencyKey(key)}
	a := [1 + releaseArgCount]any{releaseArgOwner: owner}
	v, err := s.runScript(ctx, releaseScript, k[1:], a[1:]...)
	if err != nil {
		return false, err
	}
	return asInt(v) == 1, nil
}
