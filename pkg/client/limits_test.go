package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// Each limit against hostile or careless input is hit, fails with an error
// that says which limit and by how much, is reachable with errors.Is and
// errors.As, and leaves nothing in Redis.
func TestEachLimitHasAClearError(t *testing.T) {
	b := redistest.Mini(t)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace,
		MaxInputBytes: 4096, MaxMetadataBytes: 256, MaxBatch: 3, MaxInputDepth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	keyed := task.Must[json.RawMessage, json.RawMessage]("limits-keyed", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
	plain := task.Must[json.RawMessage, json.RawMessage]("limits-plain", task.Options{})
	nest := func(levels int) []byte {
		return []byte(`{"id":"x","n":` + strings.Repeat(`[`, levels-1) + strings.Repeat(`]`, levels-1) + `}`)
	}

	// A comprehension nested four deep evaluates 10^4 inner steps: far
	// over the cost limit, and stopped there rather than run to the end.
	// It compiles; every trigger of it fails.
	const ten = `[1,2,3,4,5,6,7,8,9,10]`
	exploding := `size(` + ten + `.map(a, ` + ten + `.map(b, ` + ten + `.map(c, ` + ten + `.map(d, a+b+c+d))))) > 0 ? input.id : "none"`
	explode, err := task.New[json.RawMessage, json.RawMessage]("limits-cost", task.Options{Idempotency: task.TTL(exploding, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		trigger func() error
		is      error
		as      func(error) bool
		message string
	}{
		{
			name: "cost", is: idempotency.ErrCostLimit,
			trigger: func() error {
				_, err := client.RunNoWait(ctx, c, explode, json.RawMessage(`{"id":"x"}`))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrCostLimit
			},
			message: "exceeded the cost limit of 10000",
		},
		{
			name: "input size", is: client.ErrInputTooLarge,
			trigger: func() error {
				_, err := client.RunNoWait(ctx, c, plain, json.RawMessage(`{"blob":"`+strings.Repeat("x", 5000)+`"}`))
				return err
			},
			as:      func(err error) bool { var e *client.LimitError; return errors.As(err, &e) && e.What == "input" },
			message: `task "limits-plain": input is 5011 bytes, over the limit of 4096`,
		},
		{
			name: "metadata size", is: client.ErrInputTooLarge,
			trigger: func() error {
				_, err := client.RunNoWait(ctx, c, plain, json.RawMessage(`{}`), client.WithMetadata(map[string]any{"m": strings.Repeat("y", 300)}))
				return err
			},
			as: func(err error) bool {
				var e *client.LimitError
				return errors.As(err, &e) && e.What == "additional_metadata"
			},
			message: "additional_metadata is 308 bytes, over the limit of 256",
		},
		{
			name: "key length", is: idempotency.ErrKeyTooLong,
			trigger: func() error {
				_, err := client.RunNoWait(ctx, c, keyed, json.RawMessage(`{"id":"`+strings.Repeat("k", 600)+`"}`))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrKeyTooLong && e.Size == 600
			},
			message: "produced a key of 600 bytes, over the limit of 512",
		},
		{
			name: "batch size", is: client.ErrInputTooLarge,
			trigger: func() error {
				_, err := client.RunMany(ctx, c, plain, []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{}`), json.RawMessage(`{}`), json.RawMessage(`{}`)})
				return err
			},
			as:      func(err error) bool { var e *client.LimitError; return errors.As(err, &e) && e.What == "batch" },
			message: "batch is 4 triggers, over the limit of 3",
		},
		{
			name: "input depth with an expression", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := client.RunNoWait(ctx, c, keyed, json.RawMessage(nest(40)))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "input nests deeper than the limit of 16 levels",
		},
		{
			name: "input depth without an expression", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := client.RunNoWait(ctx, c, plain, json.RawMessage(nest(40)))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "input nests deeper than the limit of 16 levels",
		},
		{
			name: "metadata depth", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := client.RunNoWait(ctx, c, plain, json.RawMessage(`{}`), client.WithMetadata(nest(40)))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "additional_metadata nests deeper than the limit of 16 levels",
		},
		{
			name: "malformed input with an expression", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := c.TriggerJSON(ctx, keyed.Definition(), []byte(`{"id":"x",}`))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "input is not valid JSON",
		},
		{
			name: "malformed input without an expression", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := c.TriggerJSON(ctx, plain.Definition(), []byte(`{"id":`))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "input is not valid JSON",
		},
		{
			name: "malformed metadata", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := c.TriggerJSON(ctx, keyed.Definition(), []byte(`{"id":"x"}`), client.WithMetadata([]byte(`{"a"}`)))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "additional_metadata is not valid JSON",
		},
		{
			name: "malformed metadata without an expression", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := c.TriggerJSON(ctx, plain.Definition(), []byte(`{}`), client.WithMetadata([]byte(`{"a"}`)))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "additional_metadata is not valid JSON",
		},
		{
			name: "metadata that is not an object", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := c.TriggerJSON(ctx, plain.Definition(), []byte(`{}`), client.WithMetadata([]byte(`[1]`)))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "additional_metadata must be a JSON object",
		},
		{
			name: "malformed signal payload", is: idempotency.ErrInput,
			trigger: func() error {
				_, err := c.Signal(ctx, "x", json.RawMessage(`{"a":`))
				return err
			},
			as: func(err error) bool {
				var e *idempotency.Error
				return errors.As(err, &e) && e.Kind == idempotency.ErrInput
			},
			message: "signal payload is not valid JSON",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.trigger()
			if err == nil {
				t.Fatal("accepted; want the limit's error")
			}
			if !errors.Is(err, tc.is) || !tc.as(err) {
				t.Fatalf("error %T %q is not the typed error of this limit", err, err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error %q does not say %q", err, tc.message)
			}
		})
	}
	if keys, err := redistest.NamespaceKeys(ctx, b.Client, b.Namespace); err != nil || len(keys) != 0 {
		t.Fatalf("refused triggers left %v in Redis", keys)
	}
}
