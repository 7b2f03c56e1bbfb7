// Package clientlink lets taskq's own packages reach what is behind a
// *client.Client: the storage engine (package events pushes and reads
// events through it, tests and fault tooling inspect the store with it),
// the Redis guard and metrics (the HTTP API's readiness and /metrics), the
// client's settings, and the firing of a cron tick (the worker's
// scheduler). A *client.Client embeds a Holder of its Link, whose one
// method is unexported: only this package can call it, so the client
// shares the Link with taskq's own packages (which call Of) and adds
// nothing to the API its users see; users cannot import this package,
// and what they may do with stored runs, keys, events and tasks is
// client.Inspector.
package clientlink

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisguard"
	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/task"
)

// Link is what a *client.Client shares with taskq's own packages.
type Link struct {
	Engine engine.Engine
	// Guard watches Redis's maxmemory-policy and memory.
	Guard *redisguard.Guard
	// Metrics are the client's own metrics (of durable triggers).
	Metrics prometheus.Collector
	// The client's settings, defaults filled in.
	Namespace        string
	Clock            task.Clock
	OperationTimeout time.Duration
	// Admission is the client's limits, run retention and scheduling
	// bound, for triggers made by another path (event ingestion) to get
	// the same.
	Admission admission.Config
	// Unavailable words an error of Engine as the client's own calls do:
	// a Redis that did not answer in time is a *client.UnavailableError.
	Unavailable func(ctx context.Context, err error) error
	// FireTick triggers the run of one tick of a schedule, under the
	// tick's key, without moving the schedule's cursor: a tick fired
	// before is an error matching client.ErrIdempotencyCollision, a task
	// no worker registered one matching client.ErrTaskNotFound.
	FireTick func(ctx context.Context, cs *ticks.Compiled, tick time.Time) error
	// AdvanceSchedule moves a schedule's cursor to tick unless it is at or
	// past it already; a deleted schedule is client.ErrScheduleNotFound.
	AdvanceSchedule func(ctx context.Context, name string, tick time.Time) error
	// Spawn records and triggers the children of a run (worker.Spawn,
	// SpawnMany), and returns their run IDs in the order of req.Inputs:
	// each the child recorded under its name before, if any, so that a
	// parent replayed never makes a second one (see engine.Child).
	Spawn func(ctx context.Context, req SpawnRequest) ([]string, error)
}

// SpawnRequest is one call of a handler that spawns children of one task.
type SpawnRequest struct {
	Def *task.Definition
	// Parent is the run spawning them.
	Parent string
	// Inputs are the children's inputs (JSON), one child each.
	Inputs [][]byte
	// Many says the call spawns a list (SpawnMany): a name given
	// (client.ChildName) is numbered for each child.
	Many bool
	// Options are the call's client.RunOption values.
	Options []any
	// Position reserves n positions among the handler's spawns that are
	// given no name and returns the first; called only for those.
	Position func(n int) int
}

// Holder holds a client's Link. *client.Client embeds one (made by Hold)
// and so has its unexported method link, which only this package can
// call: a Holder must have no exported field or method, which the client
// would pass on to its users.
type Holder struct{ l *Link }

// Hold returns a Holder of l.
func Hold(l *Link) Holder { return Holder{l: l} }

func (h Holder) link() *Link { return h.l }

// linker is *client.Client (which embeds a Holder), named here without
// importing package client, which imports this package.
type linker interface {
	link() *Link
}

// Of returns the link of c, a *client.Client. It panics for anything else.
func Of(c any) *Link { return c.(linker).link() }

// Store returns the engine of c, a *client.Client. It panics for
// anything else.
func Store(c any) engine.Engine { return Of(c).Engine }
