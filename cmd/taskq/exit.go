package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// Exit codes. Scripts branch on them, so they are part of the CLI's
// contract: each is listed in exitCodes, which --help prints, and in
// docs/cli.md (TestExitCodesListed checks both).
const (
	exitOK        = 0 // success
	exitFailure   = 1 // anything else: Redis unreachable, a failed run, a bad expression
	exitUsage     = 2 // bad flags or arguments; nothing was done
	exitNotFound  = 3 // the run, task, event or key does not exist
	exitCollision = 4 // a trigger was a duplicate: another run holds its idempotency key
	exitChanged   = 5 // a key changed owner since it was read; nothing was released
	exitPending   = 6 // the run has not finished (within --wait)
	// exitNotDurable: runs trigger wrote the run, but fewer replicas than
	// --replicas acknowledged it in time.
	exitNotDurable = 7
)

// exitCodes names every exit code, in order, for --help.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "ok"},
	{exitFailure, "failure"},
	{exitUsage, "usage error"},
	{exitNotFound, "not found"},
	{exitCollision, "idempotency collision"},
	{exitChanged, "key changed owner"},
	{exitPending, "run not finished"},
	{exitNotDurable, "run written but not acknowledged by enough replicas"},
}

// exitCodesHelp lists the exit codes as --help shows them, in lines of at
// most 80 characters.
func exitCodesHelp() string {
	var b strings.Builder
	line := "Exit codes:"
	for i, e := range exitCodes {
		item := fmt.Sprintf("%d %s", e.code, e.meaning)
		if i < len(exitCodes)-1 {
			item += ","
		} else {
			item += "."
		}
		if len(line)+1+len(item) > 80 {
			b.WriteString(line + "\n")
			line = item
			continue
		}
		line += " " + item
	}
	b.WriteString(line)
	return b.String()
}

// errNotFound marks things the CLI itself finds missing (an idempotency key
// nobody holds); the packages' own sentinels are matched too.
var errNotFound = errors.New("not found")

// codeError carries the exit code an error ends the process with.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// usageErrorf reports bad flags or arguments (exit code 2).
func usageErrorf(format string, args ...any) error {
	return &codeError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// withCode gives err a specific exit code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codeError{code: code, err: err}
}

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	if errors.Is(err, errNotFound) || errors.Is(err, client.ErrRunNotFound) ||
		errors.Is(err, client.ErrTaskNotFound) || errors.Is(err, events.ErrEventNotFound) ||
		errors.Is(err, client.ErrScheduleNotFound) {
		return exitNotFound
	}
	if errors.Is(err, client.ErrIdempotencyCollision) {
		return exitCollision
	}
	return exitFailure
}
