package redisstore_test

import (
	"context"
	"testing"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/engine/enginetest"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// The store passes the engine's conformance suite on every backend, each
// case in a namespace of its own.
func TestConformance(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		open := func(t *testing.T) engine.Engine {
			ns := redistest.Namespace(t)
			t.Cleanup(func() { redistest.DeleteNamespace(context.Background(), b.Client, ns) })
			return redisstore.New(b.Client, ns).Engine()
		}
		enginetest.Run(t, open, enginetest.Options{
			// Expiries follow miniredis's clock, which FastForward moves.
			Elapse: b.Advance,
			Reopen: func(t *testing.T, e engine.Engine, partitions int) engine.Engine {
				return redisstore.NewPartitioned(b.Client, redisstore.StoreOf(e).Keys().Namespace(), partitions).Engine()
			},
		})
	})
}
