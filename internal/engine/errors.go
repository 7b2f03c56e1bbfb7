package engine

import (
	"errors"
	"fmt"
)

// ErrRunNotFound is returned when a run record does not exist (never
// created, or removed after its retention).
var ErrRunNotFound = errors.New("run not found")

// ErrWrongType matches every *WrongTypeError.
var ErrWrongType = errors.New("redis key holds a value of the wrong type")

// ErrUnavailable says Redis cannot serve a call now: it did not answer,
// it is out of memory, or it is a replica that refuses writes. Retrying
// later is safe. pkg/client exports it as client.ErrUnavailable.
var ErrUnavailable = errors.New("redis unavailable")

// ErrOutOfMemory matches every *OutOfMemoryError.
var ErrOutOfMemory = errors.New("redis is out of memory")

// ErrReadOnly matches every *ReadOnlyError.
var ErrReadOnly = errors.New("redis refused a write as a read-only replica")

// WrongTypeError says a key taskq needs holds a value of another type, so a
// script refused to write anything.
type WrongTypeError struct {
	Key  string
	Type string
}

func (e *WrongTypeError) Error() string {
	return fmt.Sprintf("redis key %q holds a %s, not what taskq expects there; nothing was written", e.Key, e.Type)
}

// Is makes errors.Is(err, ErrWrongType) hold.
func (e *WrongTypeError) Is(target error) bool { return target == ErrWrongType }

// OutOfMemoryError says Redis refused a script's write because its memory
// is at maxmemory (with maxmemory-policy noeviction, the only policy taskq
// accepts, Redis refuses writes there rather than evict keys). Nothing of
// the call was written: Redis refuses a script's first write, and a script
// that has written nothing before stops there (see docs/operations.md).
// Retrying is safe and succeeds once memory is freed (runs finishing and
// their retention expiring) or maxmemory is raised.
type OutOfMemoryError struct {
	// Addr is the Redis address, when the store knows it.
	Addr string
	// Script names the script Redis refused ("enqueue", "push_event", ...),
	// or the command ("XGROUP CREATE").
	Script string
	// Reply is Redis's own error reply.
	Reply string
}

func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("%s is out of memory (used_memory at maxmemory) and refused to write%s; nothing was written: "+
		"retry once memory is freed (runs finish and their retention expires) or maxmemory is raised (%s)",
		redisAt(e.Addr), scriptPart(e.Script), e.Reply)
}

// Is makes errors.Is(err, ErrOutOfMemory) and errors.Is(err,
// ErrUnavailable) hold.
func (e *OutOfMemoryError) Is(target error) bool {
	return target == ErrOutOfMemory || target == ErrUnavailable
}

// ReadOnlyError says Redis refused a script's write because the server is a
// read-only replica: after a failover, a client still connected to the
// demoted master gets this until it reaches the new one. Nothing was
// written; retrying once the failover has settled is safe.
type ReadOnlyError struct {
	// Addr is the Redis address, when the store knows it.
	Addr string
	// Script names the script Redis refused.
	Script string
	// Reply is Redis's own error reply.
	Reply string
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("%s is a read-only replica and refused to write%s; nothing was written: "+
		"a failover demoted it, or the URL names a replica; retry once the failover has settled (%s)",
		redisAt(e.Addr), scriptPart(e.Script), e.Reply)
}

// Is makes errors.Is(err, ErrReadOnly) and errors.Is(err, ErrUnavailable)
// hold.
func (e *ReadOnlyError) Is(target error) bool {
	return target == ErrReadOnly || target == ErrUnavailable
}

func redisAt(addr string) string {
	if addr == "" {
		return "Redis"
	}
	return "Redis at " + addr
}

func scriptPart(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// ErrInvalidCursor is returned for a listing's cursor that no page of that
// listing returned.
var ErrInvalidCursor = errors.New("invalid cursor")

// ErrRunExists is returned for a trigger whose run ID another run already
// has: a trigger sent again after its reply was lost, with the same ID.
var ErrRunExists = errors.New("run ID already exists")

// ErrEventExists is returned for an event whose ID another event already
// has.
var ErrEventExists = errors.New("event ID already exists")
