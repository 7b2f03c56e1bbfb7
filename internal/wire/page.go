package wire

import (
	"bytes"
	"encoding/json"
)

// Page is a page of a listing as the HTTP API and the command line's -o
// json write it: {"runId": …, "<Name>": [...], "nextCursor": …}, runId
// only for a run's signals and steps, nextCursor only while the listing
// goes on.
type Page struct {
	RunID      string
	Name       string
	Items      any
	NextCursor string
}

// MarshalJSON writes the page with its items under Name.
func (p Page) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if p.RunID != "" {
		id, _ := json.Marshal(p.RunID)
		b.WriteString(`"runId":`)
		b.Write(id)
		b.WriteByte(',')
	}
	name, _ := json.Marshal(p.Name)
	items, err := json.Marshal(p.Items)
	if err != nil {
		return nil, err
	}
	b.Write(name)
	b.WriteByte(':')
	b.Write(items)
	if p.NextCursor != "" {
		next, _ := json.Marshal(p.NextCursor)
		b.WriteString(`,"nextCursor":`)
		b.Write(next)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
