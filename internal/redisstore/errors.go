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

// scriptError turns the typed error replies of the scripts into Go errors.
func scriptError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
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
