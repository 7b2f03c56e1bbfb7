package engine

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ErrEventNotFound is returned for an event that does not exist, or whose
// record has expired.
var ErrEventNotFound = errors.New("event not found")

// EventRun is what happened to one subscribed task of an event.
type EventRun struct {
	Task    string `json:"task"`
	Outcome string `json:"outcome"`
	// RunID is the run created, or the run the event was deduplicated or
	// debounced to.
	RunID          string `json:"runId,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Error          string `json:"error,omitempty"`
}

// Event is an event record as stored.
type Event struct {
	ID      string
	Key     string
	Payload []byte
	Meta    []byte
	Created time.Time
	Runs    []EventRun
	// PendingFanout is the pending fan-out the store holds, "" once the
	// outcomes are in Runs.
	PendingFanout string
}

// ParseFinished reads a notice of the finished channel: how many runs
// reached each terminal status. Unknown statuses and malformed counts are
// left out.
func ParseFinished(msg string) map[string]int {
	f := strings.Fields(msg)
	out := make(map[string]int, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		n, err := strconv.Atoi(f[i+1])
		if err != nil || n <= 0 || !IsTerminal(f[i]) {
			continue
		}
		out[f[i]] += n
	}
	return out
}
