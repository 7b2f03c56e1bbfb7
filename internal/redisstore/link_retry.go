package redisstore

import (
	"context"
	"fmt"
)

// linkRetryScript writes one side of the link between a run and its
// retry: lua/link_retry.lua.
var linkRetryScript = loadScript("link_retry")

// LinkRetry records that run retry retries run of: the retry's record
// names of (its retryof), and of's names retry (its retried). Each side
// is one call on its own run's partition, and is left alone when its
// record is gone. A side that already names another run keeps it: the
// run it names is returned in existing ("" when both sides were written or
// gone).
func (s *Store) LinkRetry(ctx context.Context, of, retry string) (existing string, err error) {
	for _, side := range []struct {
		run, other string
		field      string
	}{{retry, of, runRetryOf}, {of, retry, runRetriedBy}} {
		ks, err := s.keysOfRun(ctx, side.run)
		if err != nil {
			return "", err
		}
		k := [1 + linkRetryKeyCount]string{linkRetryKeyRun: ks.Run(side.run)}
		a := [1 + linkRetryArgCount]any{linkRetryArgField: side.field, linkRetryArgRunID: side.other}
		v, err := s.runScript(ctx, linkRetryScript, k[1:], a[1:]...)
		if err != nil {
			return "", fmt.Errorf("run %s: %w", side.run, err)
		}
		if cur, ok := v.(string); ok && existing == "" {
			existing = cur
		}
	}
	return existing, nil
}
