package redisstore

import (
	"context"

	"github.com/taskq/taskq/internal/engine"
)

// Engine is s as the engine contract: the Store's own methods, with the
// partitions and notices answered in the contract's terms.
func (s *Store) Engine() engine.Engine { return storeEngine{s} }

// storeEngine adapts the Store's methods whose Redis-shaped results the
// contract does not carry (key builders, *Notices).
type storeEngine struct{ *Store }

var _ engine.Engine = storeEngine{}

func (e storeEngine) PartitionCount(ctx context.Context) (int, error) {
	parts, err := e.Partitions(ctx)
	if err != nil {
		return 0, err
	}
	return parts.Count(), nil
}

func (e storeEngine) DoneTopic(ctx context.Context, runID string) (string, error) {
	ks, err := e.keysOfRun(ctx, runID)
	if err != nil {
		return "", err
	}
	return ks.DoneChannel(runID), nil
}

func (e storeEngine) CancelTopics(ctx context.Context) ([]string, error) {
	parts, err := e.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	topics := make([]string, parts.Count())
	for i := range topics {
		topics[i] = parts.Keys(i).CancelChannel()
	}
	return topics, nil
}

func (e storeEngine) Notices() engine.Notices { return e.Store.Notices() }

func (e storeEngine) SubscribeFinished(ctx context.Context) (engine.Notices, int, error) {
	n, channels, err := e.Store.SubscribeFinished(ctx)
	if n == nil {
		return nil, channels, err
	}
	return n, channels, err
}

// StoreOf returns the Store under an engine made by Store.Engine, for
// tooling that reads Redis itself (the history checker, the soak); nil for
// any other engine.
func StoreOf(e engine.Engine) *Store {
	if se, ok := e.(storeEngine); ok {
		return se.Store
	}
	return nil
}
