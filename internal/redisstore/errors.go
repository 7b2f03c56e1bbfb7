package redisstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/taskq/taskq/internal/engine"
)

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
			return &engine.OutOfMemoryError{Reply: msg}
		}
		return &engine.ReadOnlyError{Reply: msg}
	case strings.HasPrefix(msg, "OOM "):
		return &engine.OutOfMemoryError{Reply: msg}
	case strings.HasPrefix(msg, "READONLY "):
		return &engine.ReadOnlyError{Reply: msg}
	case strings.HasPrefix(msg, "TASKQ_WRONGTYPE "):
		f := strings.Fields(strings.TrimPrefix(msg, "TASKQ_WRONGTYPE "))
		e := &engine.WrongTypeError{}
		if len(f) > 0 {
			e.Key = f[0]
		}
		if len(f) > 1 {
			e.Type = f[1]
		}
		return e
	case strings.HasPrefix(msg, "TASKQ_EXISTS "):
		return fmt.Errorf("%w: %s", engine.ErrRunExists, strings.TrimPrefix(msg, "TASKQ_EXISTS "))
	case strings.Contains(msg, "WRONGTYPE"):
		return &engine.WrongTypeError{Type: msg}
	}
	return err
}

// named fills in the server and the script of an *OutOfMemoryError or a
// *ReadOnlyError, which scriptError cannot know.
func (s *Store) named(script string, err error) error {
	var (
		oom *engine.OutOfMemoryError
		ro  *engine.ReadOnlyError
	)
	switch {
	case errors.As(err, &oom) && oom.Script == "":
		oom.Addr, oom.Script = s.addr, script
	case errors.As(err, &ro) && ro.Script == "":
		ro.Addr, ro.Script = s.addr, script
	}
	return err
}
