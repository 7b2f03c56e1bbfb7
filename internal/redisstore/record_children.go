package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/taskq/taskq/internal/engine"
)

// recordChildrenScript records a run's children: lua/record_children.lua.
var recordChildrenScript = loadScript("record_children")

// childRecord is a child's record in its parent's children hash, named
// there by its name.
type childRecord struct {
	RunID    string `json:"r"`
	Task     string `json:"t"`
	Key      string `json:"k"`
	Detached bool   `json:"d,omitempty"`
	Created  bool   `json:"c,omitempty"`
}

func encodeChild(c engine.Child) string {
	b, _ := json.Marshal(childRecord{RunID: c.RunID, Task: c.Task, Key: c.Key, Detached: c.Detached, Created: c.Created})
	return string(b)
}

func decodeChild(name, v string) (engine.Child, error) {
	var r childRecord
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return engine.Child{}, fmt.Errorf("redisstore: child %q: %w", name, err)
	}
	return engine.Child{Name: name, RunID: r.RunID, Task: r.Task, Key: r.Key, Detached: r.Detached, Created: r.Created}, nil
}

// RecordChildren records each child of parent under its name unless one
// is recorded there already, and returns the record kept for each.
func (s *Store) RecordChildren(ctx context.Context, parent string, cs []engine.Child) ([]engine.Child, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	v, err := s.recordChildren(ctx, parent, "record", cs)
	if err != nil {
		return nil, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) == 0 {
		return nil, fmt.Errorf("redisstore: record_children: unexpected reply %v", v)
	}
	switch status := asString(r[0]); {
	case status == "":
		return nil, fmt.Errorf("%w: %s", engine.ErrRunNotFound, parent)
	case len(r) == 1 && len(cs) > 0:
		return nil, fmt.Errorf("%w: run %s is %s", engine.ErrRunEnded, parent, status)
	}
	if len(r) != len(cs)+1 {
		return nil, fmt.Errorf("redisstore: record_children: %d records for %d children", len(r)-1, len(cs))
	}
	out := make([]engine.Child, len(cs))
	for i, c := range cs {
		if out[i], err = decodeChild(c.Name, asString(r[i+1])); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MarkChildrenCreated records that the children cs of parent were created.
func (s *Store) MarkChildrenCreated(ctx context.Context, parent string, cs []engine.Child) error {
	if len(cs) == 0 {
		return nil
	}
	marked := make([]engine.Child, len(cs))
	for i, c := range cs {
		c.Created = true
		marked[i] = c
	}
	_, err := s.recordChildren(ctx, parent, "mark", marked)
	return err
}

func (s *Store) recordChildren(ctx context.Context, parent, mode string, cs []engine.Child) (any, error) {
	ks, err := s.keysOfRun(ctx, parent)
	if err != nil {
		return nil, err
	}
	keys := [1 + recordChildrenKeyCount]string{recordChildrenKeyChildren: ks.Children(parent), recordChildrenKeyRun: ks.Run(parent)}
	args := make([]any, recordChildrenArgCount+recordChildrenItemArgCount*len(cs))
	args[recordChildrenArgMode-1] = mode
	for i, c := range cs {
		a := recordChildrenArgCount + recordChildrenItemArgCount*i
		args[a+recordChildrenItemArgName] = c.Name
		args[a+recordChildrenItemArgRecord] = encodeChild(c)
	}
	return s.runScript(ctx, recordChildrenScript, keys[1:], args...)
}
