package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// Validate checks a list as PushMany would, past PushMany's batch limit,
// names the first bad event by its position in the whole list, and writes
// nothing.
func TestValidateNamesTheFirstBadEventAndWritesNothing(t *testing.T) {
	b := redistest.Mini(t)
	c := newClient(t, b, nil)
	g := newIngester(t, c, events.Options{MaxBatch: 2})
	good := events.Input{Key: "order.paid", Payload: json.RawMessage(`{"id":"1"}`)}
	list := []events.Input{good, good, good, {Key: "order.paid", Payload: json.RawMessage(`[1]`)}, {Key: ""}}
	err := g.Validate(list)
	var ie *events.InvalidEventError
	if !errors.As(err, &ie) || ie.Index != 3 || ie.Field != "payload" {
		t.Fatalf("Validate = %v; want an *InvalidEventError for payload of event 3", err)
	}
	if err := g.Validate(list[:3]); err != nil {
		t.Fatalf("three good events, over the batch limit of 2: %v", err)
	}
	big := events.Input{Key: "order.paid", Payload: json.RawMessage(`{"b":"` + strings.Repeat("x", 2<<20) + `"}`)}
	// One error type for every size limit: the client's, wrapped in the
	// error that names the event and its field.
	var le *client.LimitError
	err = g.Validate([]events.Input{good, big})
	if !errors.As(err, &ie) || ie.Index != 1 || ie.Field != "payload" || !errors.As(err, &le) ||
		le.What != "payload" || le.Size != len(big.Payload) || !errors.Is(err, client.ErrInputTooLarge) {
		t.Fatalf("oversized payload: %v; want an *InvalidEventError for payload of event 1 wrapping a *client.LimitError", err)
	}
	keys, err := redistest.NamespaceKeys(context.Background(), b.Client, b.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, "}:event") {
			t.Fatalf("Validate wrote %v", k)
		}
	}
}
