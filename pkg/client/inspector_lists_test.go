package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// stepClock is a clock that stands still until told to move.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

var listDef = task.Must[json.RawMessage, json.RawMessage]("list-runs", task.Options{Idempotency: task.TTL(`"list:" + input.id`, time.Hour)}).Definition()

// listAll walks a listing to its end, checking every page's size.
func listAll(t *testing.T, in *client.Inspector, o client.ListOptions) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("the listing does not end")
		}
		page, err := in.ListRuns(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if o.Limit > 0 && len(page.Items) > o.Limit {
			t.Fatalf("page of %d runs, over the limit of %d", len(page.Items), o.Limit)
		}
		for _, r := range page.Items {
			ids = append(ids, r.ID)
		}
		if o.Cursor = page.NextCursor; o.Cursor == "" {
			return ids
		}
	}
}

// Runs filter by key, by time range, and by input and metadata fields,
// each page no larger than asked and the listing newest first.
func TestInspectorFiltersRuns(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		clock := &stepClock{t: base}
		c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		in := c.Inspector()
		var all, customer42, web, inWindow []string
		for i := range 20 {
			clock.set(base.Add(time.Duration(i) * time.Minute))
			customer := any(i % 3 * 21) // 0, 21, 42
			if i == 5 {
				customer = "42" // a string matches too
			}
			input, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i), "customer": customer, "nested": map[string]any{"n": i}})
			source := "api"
			if i%2 == 0 {
				source = "web"
			}
			meta, _ := json.Marshal(map[string]any{"source": source})
			h, err := c.TriggerJSON(ctx, listDef, input, client.WithMetadata(meta))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, h.ID())
			if customer == 42 || customer == "42" {
				customer42 = append(customer42, h.ID())
			}
			if source == "web" {
				web = append(web, h.ID())
			}
			if i >= 4 && i < 9 {
				inWindow = append(inWindow, h.ID())
			}
		}
		for _, s := range [][]string{all, customer42, web, inWindow} {
			slices.Reverse(s)
		}
		where := func(exprs ...string) []string { return exprs }
		for _, tc := range []struct {
			name string
			o    client.ListOptions
			want []string
		}{
			{"all", client.ListOptions{Limit: 6}, all},
			{"input field", client.ListOptions{Where: where("input.customer=42"), Limit: 2}, customer42},
			{"input field as 42.0", client.ListOptions{Where: where("input.customer=42.0")}, slices.DeleteFunc(slices.Clone(customer42), func(id string) bool { return id == all[len(all)-1-5] })},
			{"quoted string only", client.ListOptions{Where: where(`input.customer="42"`)}, []string{all[len(all)-1-5]}},
			{"nested field", client.ListOptions{Where: where("input.nested.n=7")}, []string{all[len(all)-1-7]}},
			{"metadata field", client.ListOptions{Where: where("metadata.source=web"), Limit: 4}, web},
			{"both", client.ListOptions{Where: where("metadata.source=web", "input.customer=42")}, intersect(web, customer42)},
			{"key", client.ListOptions{Key: "list:3"}, []string{all[len(all)-1-3]}},
			{"time range", client.ListOptions{Since: base.Add(4 * time.Minute), Until: base.Add(9 * time.Minute), Limit: 2}, inWindow},
			{"since only", client.ListOptions{Since: base.Add(17 * time.Minute)}, all[:3]},
			{"until only", client.ListOptions{Until: base.Add(2 * time.Minute)}, all[len(all)-2:]},
			{"no match", client.ListOptions{Where: where("input.customer=7")}, nil},
		} {
			if got := listAll(t, in, tc.o); !slices.Equal(got, tc.want) {
				t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
			}
		}

		// Bad options are typed errors naming the option and the limit.
		var oe *client.ListOptionError
		for _, o := range []client.ListOptions{
			{Limit: client.ListLimitMax + 1},
			{Status: "done"},
			{Since: base.Add(time.Hour), Until: base},
			{Where: make([]string, client.WhereMax+1)},
		} {
			if _, err := in.ListRuns(ctx, o); !errors.As(err, &oe) || !errors.Is(err, client.ErrInvalidListOption) {
				t.Errorf("ListRuns(%+v) = %v, want a *ListOptionError", o, err)
			}
		}
		if _, err := in.ListRuns(ctx, client.ListOptions{Limit: 5000}); err == nil || err.Error() != "limit 5000 is over the maximum of 1000" {
			t.Errorf("limit 5000: %v", err)
		}
		for _, bad := range []string{"customer=42", "input=42", "input.=1", "input.a..b=1", "payload.x=1", "input.x"} {
			if _, err := in.ListRuns(ctx, client.ListOptions{Where: []string{bad}}); !errors.As(err, &oe) || oe.Option != "where" {
				t.Errorf("Where %q: %v, want a *ListOptionError for where", bad, err)
			}
		}
	})
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// Keys filter by their owner's task and status.
func TestInspectorFiltersKeysByOwner(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		var cancelled string
		for i := range 6 {
			h, err := c.TriggerJSON(ctx, listDef, []byte(fmt.Sprintf(`{"id":"%d"}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			if i == 2 {
				if _, err := c.Handle(h.ID()).Cancel(ctx); err != nil {
					t.Fatal(err)
				}
				cancelled = h.ID()
			}
			if _, err := client.RunNoWait(ctx, c, inspectB, orderInput{ID: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		keys := func(o client.ListOptions) map[string]string {
			got := map[string]string{}
			for {
				page, err := in.ListKeys(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range page.Items {
					got[k.Key] = k.OwnerRunID
				}
				if o.Cursor = page.NextCursor; o.Cursor == "" {
					return got
				}
			}
		}
		if got := keys(client.ListOptions{Task: listDef.Name}); len(got) != 6 {
			t.Errorf("keys of task %s: %v, want 6", listDef.Name, got)
		}
		if got := keys(client.ListOptions{Task: listDef.Name, Status: client.StatusCancelled}); len(got) != 1 || got["list:2"] != cancelled {
			t.Errorf("keys of cancelled owners: %v, want list:2 held by %s", got, cancelled)
		}
		if got := keys(client.ListOptions{Status: client.StatusQueued}); len(got) != 11 {
			t.Errorf("keys of queued owners: %d, want 11", len(got))
		}
		if _, err := in.ListKeys(ctx, client.ListOptions{Status: "held"}); !errors.Is(err, client.ErrInvalidListOption) {
			t.Errorf("status held: %v, want ErrInvalidListOption", err)
		}
	})
}

// Counts are by task and status, of a window, and say when a bound cut
// them short.
func TestInspectorCountsRunsByTaskAndStatus(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		for i := range 5 {
			h, err := c.TriggerJSON(ctx, listDef, []byte(fmt.Sprintf(`{"id":"%d"}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			if i < 2 {
				if _, err := c.Handle(h.ID()).Cancel(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := client.RunNoWait(ctx, c, inspectA, orderInput{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		got, err := in.CountRuns(ctx, client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[client.Status]int{
			listDef.Name:    {client.StatusQueued: 3, client.StatusCancelled: 2},
			inspectA.Name(): {client.StatusQueued: 1},
		}
		if fmt.Sprint(got.Tasks) != fmt.Sprint(want) || got.Counted != 6 || got.Truncated {
			t.Fatalf("counts = %+v, want %v of 6 runs, not truncated", got, want)
		}
		got, err = in.CountRuns(ctx, client.ListOptions{Since: time.Now().Add(time.Hour)})
		if err != nil || got.Counted != 0 || len(got.Tasks) != 0 {
			t.Fatalf("counts of a future window = %+v, %v; want none", got, err)
		}
	})
}
