package engine

// IndexEntry is one entry of a time index (the runs index, the events
// index, an event key's index): a record's ID and its score, the unix ms it
// was created.
type IndexEntry struct {
	ID    string
	Score int64
}
