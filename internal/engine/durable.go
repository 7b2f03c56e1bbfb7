package engine

import (
	"errors"
	"fmt"

	"github.com/taskq/taskq/pkg/task"
)

// Durability is the acknowledgement a trigger asks for, defined once in
// package task.
type Durability = task.Durability

// Durable reports whether d asks for anything: replicas or a local fsync.
func Durable(d Durability) bool { return d.Replicas > 0 || d.LocalFsync }

// WithDefaults returns d with a zero Timeout replaced by
// task.DurabilityTimeoutDefault when d asks for anything.
func WithDefaults(d Durability) Durability {
	if Durable(d) && d.Timeout == 0 {
		d.Timeout = task.DurabilityTimeoutDefault
	}
	return d
}

// Ack is how far a durable trigger's write reached.
type Ack struct {
	// Wanted is what was asked for, with its defaults filled in.
	Wanted Durability
	// Replicas is how many replicas acknowledged the write (WAIT's reply,
	// or WAITAOF's second).
	Replicas int
	// LocalFsynced says the master's append-only file holds the write on
	// disk (WAITAOF's first reply); false when no fsync was asked for.
	LocalFsynced bool
	// Err says why the wait itself failed after the write succeeded (the
	// connection broke, the server refused WAITAOF): how far the write
	// reached is then unknown.
	Err error
}

// Reached reports whether the write reached the level asked for.
func (a Ack) Reached() bool {
	return a.Err == nil && a.Replicas >= a.Wanted.Replicas && (!a.Wanted.LocalFsync || a.LocalFsynced)
}

// ErrFsyncUnsupported matches every *FsyncUnsupportedError.
var ErrFsyncUnsupported = errors.New("redis cannot wait for a local fsync")

// FsyncUnsupportedError says a trigger asked for a local fsync (WAITAOF)
// of a Redis older than 7.2, or one that does not tell its version.
// Nothing was written.
type FsyncUnsupportedError struct {
	// Addr is the Redis address, when the store knows it.
	Addr string
	// Version is the server's redis_version ("" when unknown).
	Version string
	// Err is why the version could not be read, when it could not.
	Err error
}

func (e *FsyncUnsupportedError) Error() string {
	have := "is version " + e.Version
	if e.Version == "" {
		have = fmt.Sprintf("does not tell its version (%v)", e.Err)
	}
	return fmt.Sprintf("%s %s: waiting for a local fsync (WAITAOF) needs Redis 7.2 or later; nothing was written: "+
		"ask for replicas only (LocalFsync false)", redisAt(e.Addr), have)
}

// Is makes errors.Is(err, ErrFsyncUnsupported) hold.
func (e *FsyncUnsupportedError) Is(target error) bool { return target == ErrFsyncUnsupported }

// Unwrap returns why the version could not be read.
func (e *FsyncUnsupportedError) Unwrap() error { return e.Err }
