package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// The defaults of SuppressedLimits.
const (
	// SuppressedCapDefault is about the most suppressed triggers a
	// namespace keeps, over all its partitions.
	SuppressedCapDefault = 10000
	// SuppressedRetentionDefault is how long a suppressed trigger is kept.
	SuppressedRetentionDefault = 24 * time.Hour
)

// The sources of a trigger, as a suppressed trigger records them; an
// event's runs record SourceEventPrefix followed by the event's ID.
const (
	SourceClient      = "client"
	SourceHTTP        = "http"
	SourceCLI         = "cli"
	SourceEventPrefix = sourceEventPrefix
)

// MaxSourceBytes bounds a trigger's Source.
const MaxSourceBytes = 64

// What a suppressed trigger did instead of creating a run.
const (
	SuppressedRejected     = "rejected"     // refused (policy reject): the caller got a collision
	SuppressedAttached     = "attached"     // the caller got the owner (policy attach)
	SuppressedSignalled    = "signalled"    // its input went to the owner as a signal (policy signal)
	SuppressedDebounced    = "debounced"    // the owner, still waiting, took its input
	SuppressedDeduplicated = "deduplicated" // an event's task: the event records the owner
)

// digestLen is how many hex digits of the input's SHA-256 a record keeps.
const digestLen = 16

// SuppressedLimits bound the suppressed-trigger records of a namespace.
type SuppressedLimits struct {
	// Cap is about the most records kept over all partitions (0: the
	// default; negative: none recorded).
	Cap int
	// Retention is how long a record is kept (0: the default).
	Retention time.Duration
}

// WithDefaults fills in the zero values.
func (l SuppressedLimits) WithDefaults() SuppressedLimits {
	if l.Cap == 0 {
		l.Cap = SuppressedCapDefault
	}
	if l.Retention <= 0 {
		l.Retention = SuppressedRetentionDefault
	}
	return l
}

// InputDigest is the short digest of a trigger's input that a suppressed
// trigger records: the first 16 hex digits of the SHA-256 of its bytes as
// sent (equal JSON written in another key order digests differently).
func InputDigest(input []byte) string {
	sum := sha256.Sum256(input)
	return hex.EncodeToString(sum[:digestLen/2])
}

// ErrInvalidSource matches the error of CheckSource.
var ErrInvalidSource = errors.New("invalid trigger source")

// CheckSource reports whether source can be a trigger's Source: at most
// MaxSourceBytes printable ASCII characters, no space. Its error matches
// ErrInvalidSource.
func CheckSource(source string) error {
	if len(source) > MaxSourceBytes {
		return fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidSource, len(source), MaxSourceBytes)
	}
	for i := 0; i < len(source); i++ {
		if c := source[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: %q holds a space or a character that is not printable ASCII", ErrInvalidSource, source)
		}
	}
	return nil
}

// SuppressedQuery selects suppressed triggers.
type SuppressedQuery struct {
	// Key and Owner keep only the records of this idempotency key and of
	// this owner run ("" keeps all).
	Key, Owner string
	// Limit is the most records returned (at least 1).
	Limit int
	// Cursor continues a listing after the record it names ("" starts
	// from the newest).
	Cursor string
	// Now is the time the retention counts back from.
	Now time.Time
}

// Suppressed is one recorded trigger that created no run.
type Suppressed struct {
	// ID is the record's stream entry ID, in its partition, and Index its
	// place among the entry's records (the triggers of one call).
	ID        string
	Partition int
	Index     int
	Time      time.Time
	Key       string
	// Owner is the run that held the key.
	Owner string
	Task  string
	// Source says where the trigger came from: client, http, cli or
	// event:<event id> (or what a client named with its trigger).
	Source string
	// InputDigest is InputDigest of the trigger's input.
	InputDigest string
	// Outcome is one of the Suppressed* outcomes.
	Outcome string
}
