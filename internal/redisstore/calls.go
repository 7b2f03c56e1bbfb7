package redisstore

import (
	"strconv"
	"strings"
)

// The items of a call of a batch script, read back from its ARGV as go-redis
// sends it (0-based, after KEYS). Tools that watch the calls the store makes
// (internal/history records them with a go-redis hook) read them here, so
// that they follow layout.go rather than a copy of its offsets.

// EnqueueItem is one trigger of a call of enqueue.lua.
type EnqueueItem struct {
	RunID, Task, Input, Key, Strategy, Hold, Retain, Policy string
}

// EnqueueItems reads the triggers of a call of enqueue.lua.
func EnqueueItems(argv []string) []EnqueueItem {
	n := 0
	if len(argv) >= enqueueArgTriggers {
		n, _ = strconv.Atoi(argv[enqueueArgTriggers-1])
	}
	n = min(max(n, 0), max(len(argv)-enqueueArgCount, 0)/enqueueItemArgCount)
	out := make([]EnqueueItem, n)
	for i := range out {
		f := itemArgs(argv, enqueueArgCount+enqueueItemArgCount*i)
		strat, spec, _ := parseSpecValues(f(enqueueItemArgSpec))
		out[i] = EnqueueItem{
			RunID: f(enqueueItemArgRunID), Task: f(enqueueItemArgTask), Input: f(enqueueItemArgInput),
			Key: f(enqueueItemArgIdempotencyKey), Strategy: string(strat),
			Hold:   strconv.FormatInt(spec[specHold], 10),
			Retain: strconv.FormatInt(spec[specRetain], 10), Policy: strings.SplitN(f(enqueueItemArgPolicy), " ", 2)[0],
		}
	}
	return out
}

// StartItem is one delivery of a call of start.lua.
type StartItem struct {
	RunID string
	// MaxDeliveries is "" for a delivery without a spec, which start.lua
	// answers with the run's record as well.
	MaxDeliveries string
	Redelivered   bool
}

// ReplyLen is how many values of start.lua's flat reply answer the
// delivery, given whether the first of them says it started: a started
// delivery without a spec is answered with the record's values too.
func (it StartItem) ReplyLen(started bool) int {
	if started && it.MaxDeliveries == "" {
		return startReplyValues + startRecordValues
	}
	return startReplyValues
}

// StartItems reads the deliveries of a call of start.lua with nkeys KEYS.
func StartItems(nkeys int, argv []string) []StartItem {
	n := (nkeys - startKeyCount) / startItemKeyCount
	out := make([]StartItem, n)
	for i := range out {
		f := itemArgs(argv, startArgCount+startItemArgCount*i)
		out[i] = StartItem{RunID: f(startItemArgRunID), MaxDeliveries: f(startItemArgMaxDeliveries), Redelivered: f(startItemArgRedelivered) == "1"}
	}
	return out
}

// FinishItem is one outcome of a call of finish.lua.
type FinishItem struct {
	RunID, Attempt, Outcome string
	// Begins says finish.lua also begins the attempt: the delivery's
	// fields came with the time its handler began.
	Begins bool
}

// FinishItems reads the outcomes of a call of finish.lua; a retry's
// Outcome reads "retry", without its due time.
func FinishItems(argv []string) []FinishItem {
	out := make([]FinishItem, max(len(argv)-finishArgCount, 0)/finishItemArgCount)
	for i := range out {
		f := itemArgs(argv, finishArgCount+finishItemArgCount*i)
		outcome, _, _ := strings.Cut(f(finishItemArgOutcome), " ")
		out[i] = FinishItem{
			RunID: f(finishItemArgRunID), Attempt: f(finishItemArgAttempt), Outcome: outcome,
			Begins: f(finishItemArgBegan) != "" && f(finishItemArgTask) != "",
		}
	}
	return out
}

// CancelRunID reads the run a call of cancel.lua cancels.
func CancelRunID(argv []string) string { return itemArgs(argv, 0)(cancelArgRunID - 1) }

// RequeueRun reads the run and attempt a call of requeue.lua gives back.
func RequeueRun(argv []string) (runID, attempt string) {
	f := itemArgs(argv, 0)
	return f(requeueArgRunID - 1), f(requeueArgAttempt - 1)
}

// itemArgs returns the fields of the item whose ARGV start at base; a field
// past the end of argv reads "".
func itemArgs(argv []string, base int) func(field int) string {
	return func(field int) string {
		if i := base + field; i < len(argv) {
			return argv[i]
		}
		return ""
	}
}
