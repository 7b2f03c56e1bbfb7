package redisstore

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRunNotFound is returned when a run record does not exist (never
// created, or removed after its retention).
var ErrRunNotFound = errors.New("run not found")

// ErrRunExists is returned when a run ID is already taken.
var ErrRunExists = errors.New("run ID already exists")

// ErrWrongType matches every *WrongTypeError.
var ErrWrongType = errors.New("redis key holds a value of the wrong type")

// ErrUnavailable says Redis cannot serve a call now: it did not answer,
// it is out of memory, or it is a replica that refuses writes. Retrying
// later is safe. pkg/client exports it as client.ErrUnavailable.
var ErrUnavailable = errors.New("redis unavailable")

// ErrEventPartitions matches every *EventPartitionsError.
var ErrEventPartitions = errors.New("event fan-out across partitions is not supported")

// EventPartitionsError says an event was refused, nothing written, because
// its namespace has more than one partition: an event and the runs it
// triggers are written by one script, in one slot, while the runs of
// tasks with idempotency keys belong in their keys' partitions.
type EventPartitionsError struct {
	Namespace  string
	Partitions int
}

func (e *EventPartitionsError) Error() string {
	return fmt.Sprintf("event fan-out across partitions requires a namespace with 1 partition: namespace %q has %d, "+
		"so events cannot be pushed to it yet; nothing was written", e.Namespace, e.Partitions)
}

// Is makes errors.Is(err, ErrEventPartitions) hold.
func (e *EventPartitionsError) Is(target error) bool { return target == ErrEventPartitions }

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

// scriptError turns the typed error replies of the scripts, and the error
// replies Redis gives in their place, into Go errors. Redis answers OOM to
// a script's first write at maxmemory (or, for a script that may not run
// out of memory, to the script as a whole) and READONLY to any write on a
// replica; both keep their code when raised by redis.call, and get a
// TASKQ_ prefix when passed on from redis.pcall (see taskq_failed in
// lua/lib/errors.lua).
func scriptError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "TASKQ_OOM "), strings.HasPrefix(msg, "TASKQ_READONLY "):
		// As taskq_failed passes them on, as items of an array reply.
		msg = strings.TrimPrefix(msg, "TASKQ_")
		if strings.HasPrefix(msg, "OOM ") {
			return &OutOfMemoryError{Reply: msg}
		}
		return &ReadOnlyError{Reply: msg}
	case strings.HasPrefix(msg, "OOM "):
		return &OutOfMemoryError{Reply: msg}
	case strings.HasPrefix(msg, "READONLY "):
		return &ReadOnlyError{Reply: msg}
	case strings.HasPrefix(msg, "TASKQ_WRONGTYPE "):
		f := strings.Fields(strings.TrimPrefix(msg, "TASKQ_WRONGTYPE "))
		e := &WrongTypeError{}
		if len(f) > 0 {
			e.Key = f[0]
		}
		if len(f) > 1 {
			e.Type = f[1]
		}
		return e
	case strings.HasPrefix(msg, "TASKQ_EXISTS "):
		return fmt.Errorf("%w: %s", ErrRunExists, strings.TrimPrefix(msg, "TASKQ_EXISTS "))
	case strings.Contains(msg, "WRONGTYPE"):
		return &WrongTypeError{Type: msg}
	}
	return err
}

// named fills in the server and the script of an *OutOfMemoryError or a
// *ReadOnlyError, which scriptError cannot know.
func (s *Store) named(script string, err error) error {
	var (
		oom *OutOfMemoryError
		ro  *ReadOnlyError
	)
	switch {
	case errors.As(err, &oom) && oom.Script == "":
		oom.Addr, oom.Script = s.addr, script
	case errors.As(err, &ro) && ro.Script == "":
		ro.Addr, ro.Script = s.addr, script
	}
	return err
}
