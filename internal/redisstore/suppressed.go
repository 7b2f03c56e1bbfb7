package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// Suppressed triggers: a trigger that created no run because another run
// held its key (rejected, attached, signalled or debounced to the owner;
// an event's task deduplicated) is recorded by the script that refused it
// in its key's partition's stream taskq:{ns}:suppressed (lib/suppressed.lua):
// key, owner, task, "<input digest> <source>" and outcome, the time being
// the entry's ID. The owner lives in its key's partition, so a search by
// key or by owner reads one partition's stream; a listing of all merges
// them.
//
// The streams are bounded twice: each is capped at about SuppressedLimits.Cap
// divided by the namespace's partition count (XADD MAXLEN ~, which trims
// whole stream nodes: up to stream-node-max-entries, 100 by default, more
// per partition), and entries older than the retention are left out of
// every listing and trimmed by the workers' janitor (TrimSuppressed).

// SetSuppressedLimits sets the store's limits on suppressed-trigger
// records, before its first trigger.
func (s *Store) SetSuppressedLimits(l engine.SuppressedLimits) {
	l = l.WithDefaults()
	s.suppressed.Store(&l)
}

// SuppressedLimits returns the store's limits on suppressed-trigger
// records.
func (s *Store) SuppressedLimits() engine.SuppressedLimits {
	if l := s.suppressed.Load(); l != nil {
		return *l
	}
	return engine.SuppressedLimits{}.WithDefaults()
}

// suppressedCap is the cap of each partition's stream as the scripts take
// it: the namespace's cap divided by its partition count once read (1
// before), rounded up; "0" records none.
func (s *Store) suppressedCap() string {
	c := s.SuppressedLimits().Cap
	if c < 0 {
		return "0"
	}
	n := 1
	if p := s.KnownPartitions(); p != nil {
		n = max(p.Count(), 1)
	}
	return strconv.Itoa((c + n - 1) / n)
}

// sourceOf is the source a trigger records: SourceClient for "".
func sourceOf(source string) string {
	if source == "" {
		return engine.SourceClient
	}
	return source
}

// suppressedScanBatch is how many entries one XREVRANGE reads while a
// filter skips entries.
const suppressedScanBatch = 500

// ListSuppressed returns up to q.Limit suppressed triggers, newest first
// (the records of one call's entry from its last trigger to its first;
// entries of the same ID in several partitions by partition), and the
// cursor of the next page ("" when the listing has ended). With a Key or
// an Owner it reads the one partition their records live in; without, it
// merges every partition's stream. It reads every entry of a stream at
// most once per call, so a filter that matches little costs the stream's
// length (bounded by the cap).
func (s *Store) ListSuppressed(ctx context.Context, q engine.SuppressedQuery) ([]engine.Suppressed, string, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, "", err
	}
	limit := max(q.Limit, 1)
	after, err := parseSuppressedCursor(q.Cursor, parts.Count())
	if err != nil {
		return nil, "", err
	}
	var only []int
	switch {
	case q.Key != "":
		only = []int{parts.OfKey(q.Key)}
	case q.Owner != "":
		i, ok := parts.OfRun(q.Owner)
		if !ok {
			return []engine.Suppressed{}, "", nil
		}
		only = []int{i}
	default:
		for i := range parts.Count() {
			only = append(only, i)
		}
	}
	oldest := q.Now.Add(-s.SuppressedLimits().Retention).UnixMilli()
	keep := func(e *engine.Suppressed) bool {
		return (q.Key == "" || e.Key == q.Key) && (q.Owner == "" || e.Owner == q.Owner)
	}
	var all []engine.Suppressed
	ended := true
	for _, i := range only {
		got, more, err := s.scanSuppressed(ctx, parts.Keys(i), i, after, limit, oldest, keep)
		if err != nil {
			return nil, "", err
		}
		all = append(all, got...)
		ended = ended && !more
	}
	slices.SortFunc(all, newerFirst)
	out := all[:min(limit, len(all))]
	if len(out) == 0 || (ended && len(out) == len(all)) {
		return out, "", nil
	}
	last := out[len(out)-1]
	return out, formatSuppressedCursor(last), nil
}

// scanSuppressed reads partition part's stream newest first from after,
// keeping up to limit records that keep accepts and that are not older
// than oldest (unix ms). more says whether the stream may hold more.
func (s *Store) scanSuppressed(ctx context.Context, ks Keys, part int, after *suppressedPos, limit int,
	oldest int64, keep func(*engine.Suppressed) bool) (out []engine.Suppressed, more bool, err error) {
	end := "+"
	if after != nil {
		end = after.id.String()
		if part < after.part {
			prev, ok := after.id.prev()
			if !ok {
				return nil, false, nil
			}
			end = prev.String()
		}
	}
	batch := int64(suppressedScanBatch)
	for {
		v, err := s.rdb.Do(ctx, "XREVRANGE", ks.Suppressed(), end, "-", "COUNT", batch).Slice()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, false, err
		}
		var lastID streamID
		for _, raw := range v {
			id, recs, ok := suppressedEntry(raw)
			if !ok {
				continue
			}
			lastID = id
			if int64(id.ms) < oldest {
				return out, false, nil
			}
			from := len(recs) - 1
			if after != nil && part == after.part && id == after.id {
				from = min(from, after.index-1)
			}
			for i := from; i >= 0; i-- {
				e := suppressedOf(recs[i], id, part, i)
				if !keep(&e) {
					continue
				}
				if len(out) == limit {
					return out, true, nil
				}
				out = append(out, e)
			}
		}
		if int64(len(v)) < batch {
			return out, false, nil
		}
		prev, ok := lastID.prev()
		if !ok {
			return out, false, nil
		}
		end = prev.String()
	}
}

// suppressedEntry reads one entry of an XREVRANGE reply: its ID, source
// and records (see the suppressed* fields in layout.go).
func suppressedEntry(raw any) (streamID, []suppressedRec, bool) {
	e, ok := raw.([]any)
	if !ok || len(e) != 2 {
		return streamID{}, nil, false
	}
	idStr, _ := e[0].(string)
	id, ok := parseStreamID(idStr)
	fields, _ := e[1].([]any)
	if !ok {
		return streamID{}, nil, false
	}
	var source string
	recs := make([]suppressedRec, 0, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		f, _ := fields[i].(string)
		v, _ := fields[i+1].(string)
		switch f {
		case suppressedSource:
			source = v
		case suppressedRecord:
			recs = append(recs, suppressedRec{rec: v})
		}
	}
	for i := range recs {
		recs[i].source = source
	}
	return id, recs, true
}

// suppressedRec is one record of an entry, and the entry's source.
type suppressedRec struct{ rec, source string }

// suppressedOf reads record i of an entry (see suppressedRecord in
// layout.go).
func suppressedOf(r suppressedRec, id streamID, part, i int) engine.Suppressed {
	f := strings.SplitN(r.rec, " ", 5)
	for len(f) < 5 {
		f = append(f, "")
	}
	return engine.Suppressed{
		ID: id.String(), Partition: part, Index: i, Time: time.UnixMilli(int64(id.ms)), Source: r.source,
		Outcome: f[0], Owner: f[1], InputDigest: f[2], Task: f[3], Key: f[4],
	}
}

// TrimSuppressed removes partition part's suppressed triggers recorded
// before cutoff, and returns how many.
func (s *Store) TrimSuppressed(ctx context.Context, part int, cutoff time.Time) (int64, error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return 0, err
	}
	n, err := s.rdb.XTrimMinID(ctx, ks.Suppressed(), strconv.FormatInt(cutoff.UnixMilli(), 10)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	return n, nil
}

func mustStreamID(s string) streamID {
	id, _ := parseStreamID(s)
	return id
}

// suppressedPos is where a listing stopped: the last record's entry ID,
// partition and index.
type suppressedPos struct {
	id    streamID
	part  int
	index int
}

// A cursor is "<entry id>.<partition>.<index>".
func formatSuppressedCursor(e engine.Suppressed) string {
	return e.ID + "." + strconv.Itoa(e.Partition) + "." + strconv.Itoa(e.Index)
}

func parseSuppressedCursor(c string, parts int) (*suppressedPos, error) {
	if c == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: %q (of a %s listing)", engine.ErrInvalidCursor, c, "suppressed-trigger")
	f := strings.Split(c, ".")
	if len(f) != 3 {
		return nil, bad
	}
	id, ok := parseStreamID(f[0])
	p, err1 := strconv.Atoi(f[1])
	i, err2 := strconv.Atoi(f[2])
	if !ok || err1 != nil || err2 != nil || p < 0 || p >= parts || i < 0 || i > MaxItemsPerCall ||
		strconv.Itoa(p) != f[1] || strconv.Itoa(i) != f[2] {
		return nil, bad
	}
	return &suppressedPos{id: id, part: p, index: i}, nil
}

// newerFirst orders records newest first: by entry ID, then partition,
// then the later trigger of a call first.
func newerFirst(x, y engine.Suppressed) int {
	a, b := mustStreamID(x.ID), mustStreamID(y.ID)
	return cmp.Or(cmp.Compare(b.ms, a.ms), cmp.Compare(b.seq, a.seq), x.Partition-y.Partition, y.Index-x.Index)
}

// SuppressedRetention is how long a suppressed trigger is kept.
func (s *Store) SuppressedRetention() time.Duration { return s.SuppressedLimits().Retention }

// streamID is a stream entry ID, <ms>-<seq>.
type streamID struct{ ms, seq uint64 }

func parseStreamID(s string) (streamID, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return streamID{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return streamID{ms, seq}, err1 == nil && err2 == nil
}

func (id streamID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

// prev is the ID just before id; ok is false for 0-0.
func (id streamID) prev() (streamID, bool) {
	switch {
	case id.seq > 0:
		return streamID{id.ms, id.seq - 1}, true
	case id.ms > 0:
		return streamID{id.ms - 1, ^uint64(0)}, true
	}
	return streamID{}, false
}
