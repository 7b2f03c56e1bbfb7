package task

import (
	"errors"
	"time"
)

// Clock tells the time. The client, its event ingester and the worker all
// take one in their options (time.Now when nil); tests substitute a clock
// they move themselves, such as taskqtest's.
type Clock interface{ Now() time.Time }

// ErrRunCancelled says a run was cancelled, by a client, an operator or a
// newer run that superseded it. Both sides of the queue match it:
// errors.Is(err, ErrRunCancelled) holds for the result of a cancelled run
// that a client waits on (a *client.RunError) and for the cause a
// handler's context is cancelled with (context.Cause(ctx), a
// *client.RunError included).
var ErrRunCancelled = errors.New("run cancelled")
