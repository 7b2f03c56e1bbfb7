// Package cancelreason writes and reads the reason a run cancelled by its
// concurrency group, or superseded by a newer run, records as its error
// (and its cancel notice carries): the worker writes a group's reason
// (taskq_supersede in the Lua library writes a supersede's), and reads it
// back for the handler's context; the client reads it for RunError's Group
// and By.
package cancelreason

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	// supersededPrefix starts the reason of a run a newer run superseded;
	// the new run's ID follows (see internal/redisstore/lua/lib,
	// taskq_supersede).
	supersededPrefix = "superseded by run "

	displacedPrefix = "displaced by run "
	displacedIn     = " in concurrency group "
	fullPrefix      = "concurrency group "
	fullSuffix      = " was full"
)

// Displaced is the recorded reason of a run whose slot in group was taken
// by run by (task.CancelInProgress).
func Displaced(by, group string) string {
	return displacedPrefix + by + displacedIn + strconv.Quote(group)
}

// FullGroup is the recorded reason of a run cancelled because group
// already had holders of its max runs running (task.CancelNewest).
func FullGroup(group string, holders, max int) string {
	return fullPrefix + strconv.Quote(group) + fullSuffix + fmt.Sprintf(" (%d/%d running)", holders, max)
}

// Superseded is the recorded reason of a run that run by superseded
// (task.ConflictSupersede).
func Superseded(by string) string { return supersededPrefix + by }

// SupersededBy reads a run's recorded cancel reason: ok is true when a
// newer run, by, superseded it.
func SupersededBy(reason string) (by string, ok bool) {
	return strings.CutPrefix(reason, supersededPrefix)
}

// Parse reads a run's recorded cancel reason: ok is true when its
// concurrency group cancelled it, and then by is the run that took its slot
// ("" when the group was full as it came).
func Parse(reason string) (group, by string, ok bool) {
	if rest, found := strings.CutPrefix(reason, displacedPrefix); found {
		by, q, found := strings.Cut(rest, displacedIn)
		if g, err := strconv.Unquote(q); found && err == nil {
			return g, by, true
		}
	}
	if rest, found := strings.CutPrefix(reason, fullPrefix); found {
		if q, _, found := strings.Cut(rest, fullSuffix); found {
			if g, err := strconv.Unquote(q); err == nil {
				return g, "", true
			}
		}
	}
	return "", "", false
}
