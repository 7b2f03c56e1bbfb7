package engine

import (
	"cmp"
	"slices"
	"strings"
)

// IndexEntry is one entry of a time index (the runs index, the events
// index, an event key's index): a record's ID and its score, the unix ms it
// was created.
type IndexEntry struct {
	ID    string
	Score int64
}

// SortNewestFirst sorts entries merged from several indexes as one index
// lists them: newest first, those of one score by ID, descending. IDs are
// unique across partitions, so the order is total.
func SortNewestFirst(es []IndexEntry) {
	slices.SortFunc(es, func(a, b IndexEntry) int { return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(b.ID, a.ID)) })
}
