package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A child run is a run another run (its parent) spawned from its handler
// (worker.Spawn). Its identity comes from its parent: the parent records
// each child under a name (one the handler gives, or its position among
// the handler's spawns) with the run ID chosen for it, before the child is
// created, so that a parent retried, redelivered or replayed finds the
// same child under the same name and never creates a second one. The
// child's idempotency key says whose child it is (ChildKey), which is how
// a child's record knows its parent at no cost to a trigger that has none.

// ChildKeyPrefix starts the idempotency key of every child run (see
// ChildKey). Keys a task's own expression derives should not start with
// it: such a run would be shown as the child of the run its key names.
const ChildKeyPrefix = "taskq:child:"

// MaxChildNameBytes bounds a child's name.
const MaxChildNameBytes = 128

// ChildKey is the idempotency key of the child named name of the run
// parent: ChildKeyPrefix, the parent's run ID, "/" and the name; and when
// the child's task derives a key of its own (own, "" for a task without
// an expression), "/" and that key. The child of order 42 named "charge"
// of run 0190...: taskq:child:0190.../charge/order:42.
func ChildKey(parent, name, own string) string {
	k := ChildKeyPrefix + parent + "/" + name
	if own != "" {
		k += "/" + own
	}
	return k
}

// ParentOf is the run that spawned the run whose idempotency key is key
// (see ChildKey), or "" when key is not a child's.
func ParentOf(key string) string {
	rest, ok := strings.CutPrefix(key, ChildKeyPrefix)
	if !ok {
		return ""
	}
	parent, name, ok := strings.Cut(rest, "/")
	if !ok || parent == "" || name == "" {
		return ""
	}
	return parent
}

// ErrInvalidChildName matches the error of CheckChildName.
var ErrInvalidChildName = errors.New("invalid child name")

// CheckChildName reports whether name can name a child: 1 to
// MaxChildNameBytes bytes of printable ASCII without a space, "/" (which
// ends the name in the child's key) or "#" (which numbers the children of
// one call, and names the children a handler does not name by their
// position). Its error matches ErrInvalidChildName.
func CheckChildName(name string) error {
	if name == "" || len(name) > MaxChildNameBytes {
		return fmt.Errorf("%w: %q must be 1 to %d bytes", ErrInvalidChildName, name, MaxChildNameBytes)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == '/' || c == '#' {
			return fmt.Errorf("%w: %q holds a space, a \"/\", a \"#\" or a character that is not printable ASCII", ErrInvalidChildName, name)
		}
	}
	return nil
}

// PositionName names the child at position i among its parent handler's
// spawns that were given no name: "#0", "#1", ...
func PositionName(i int) string { return "#" + strconv.Itoa(i) }

// NumberedName names the i-th child of a call that spawned many children
// under one name: "<name>#0", "<name>#1", ...
func NumberedName(name string, i int) string { return name + "#" + strconv.Itoa(i) }

// ErrChildMismatch says a handler spawned, under a name its run had used
// before (given, or its position), a child of another task or key than it
// did then: its spawns are not deterministic (their order changed, or
// the key a child derives from its input), and the child recorded before
// is not silently taken for the new one.
var ErrChildMismatch = errors.New("child does not match the one spawned before under its name")

// ErrRunEnded says a run that has ended (or has no record) cannot record
// children: a handler that spawns after its run was cancelled.
var ErrRunEnded = errors.New("run has ended")

// Child is a child run as its parent records it.
type Child struct {
	// Name is the child's name among its parent's children.
	Name string
	// RunID is the child's run ID, chosen before the child is created.
	RunID string
	// Task is the child's task, and Key its idempotency key (ChildKey).
	Task string
	Key  string
	// Detached children are not cancelled with their parent.
	Detached bool
	// Created says the child's run was created: a parent replayed does
	// not trigger it again. A child recorded but not created is triggered
	// (with its RunID, so only once) by the parent's next spawn of it.
	Created bool
}

// SortChildren orders children by name, the numbers after a "#" compared
// as numbers: the positions and numbered names in the order they were
// spawned.
func SortChildren(cs []Child) {
	slices.SortFunc(cs, func(a, b Child) int {
		an, ai, aok := splitNumbered(a.Name)
		bn, bi, bok := splitNumbered(b.Name)
		if c := strings.Compare(an, bn); c != 0 || !aok || !bok {
			return cmp.Or(c, strings.Compare(a.Name, b.Name))
		}
		return cmp.Compare(ai, bi)
	})
}

func splitNumbered(name string) (string, int, bool) {
	i := strings.LastIndexByte(name, '#')
	if i < 0 {
		return name, 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	return name[:i], n, err == nil
}

// CascadeGrace is how long a cancelled run's cascade (cancelling its
// children) is left to the process that cancelled it before a worker takes
// it over. A canceller cascades at once, within its operation timeout; a
// run cancelled in a script (superseded, or cancelled by its concurrency
// group) has its children cancelled by a worker after this long, plus up
// to the janitor's look interval.
const CascadeGrace = 5 * time.Second

// SpawnGrace is how long after a parent was cancelled the cascade keeps
// looking for a child recorded before the cancel but not created yet: its
// spawn may be on its way. A child created later than that is not
// cancelled.
const SpawnGrace = time.Minute

// CascadeResult is what cancelling a run's children did.
type CascadeResult struct {
	// Cancelled counts the descendants cancelled (children, and theirs).
	Cancelled int
	// Pending counts the children recorded but not created yet: the
	// cascade stays pending for a worker to look again (see SpawnGrace).
	Pending int
}
