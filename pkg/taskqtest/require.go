package taskqtest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// RequireTriggered asserts that exactly one run of tk that every match
// accepts was triggered, and returns it, its input decoded, for further
// assertions. With no match given, it asserts that tk was triggered once.
// Queued, running and ended runs all count; a trigger rejected as a
// duplicate created no run and does not. More than one matching run fails
// too, as the run to return would be ambiguous: narrow the matches, or use
// RequireTriggeredN.
//
// A failure stops the test (t.Fatalf) and lists the runs of tk that were
// triggered instead, or the tasks that were, if tk never was.
func RequireTriggered[I, O any](t testing.TB, h *Harness, tk *task.Task[I, O], matches ...Match) *Run[I, O] {
	t.Helper()
	return requireN(t, "RequireTriggered", h, tk, 1, matches)[0]
}

// RequireTriggeredN asserts that exactly n runs of tk that every match
// accepts were triggered, and returns them, oldest first; n = 0 asserts
// that none was. See RequireTriggered.
func RequireTriggeredN[I, O any](t testing.TB, h *Harness, tk *task.Task[I, O], n int, matches ...Match) []*Run[I, O] {
	t.Helper()
	if n < 0 {
		t.Fatalf("taskqtest: RequireTriggeredN(%d): the count must not be negative", n)
	}
	return requireN(t, "RequireTriggeredN", h, tk, n, matches)
}

func requireN[I, O any](t testing.TB, fn string, h *Harness, tk *task.Task[I, O], n int, matches []Match) []*Run[I, O] {
	t.Helper()
	want := reflect.TypeFor[I]()
	for _, m := range matches {
		if got := m.inputType(); got != nil && got != want {
			t.Fatalf("taskqtest: %s: %s is written for input type %s, but task %q takes %s", fn, m, got, tk.Name(), want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeoutDefault)
	defer cancel()
	infos, err := h.runInfos(ctx)
	if err != nil {
		t.Fatalf("taskqtest: %s: list the runs of %s: %v", fn, tk.Name(), err)
	}
	all, err := typedRuns(tk, infos)
	if err != nil {
		t.Fatalf("taskqtest: %s: %v", fn, err)
	}
	var found []*Run[I, O]
	for _, r := range all {
		if matchAll(matches, r.Info, r.Input) {
			found = append(found, r)
		}
	}
	if len(found) == n {
		return found
	}
	var b strings.Builder
	fmt.Fprintf(&b, "taskqtest: %s: want %s of task %q%s, found %d.", fn, plural(n, "run"), tk.Name(), describe(matches), len(found))
	switch {
	case n == 0:
		fmt.Fprintf(&b, "\nMatching runs:%s", listRuns(found))
	case len(all) > 0:
		fmt.Fprintf(&b, "\nRuns of %q (%d):%s", tk.Name(), len(all), listRuns(all))
	default:
		fmt.Fprintf(&b, "\nNo run of %q was triggered; %s.", tk.Name(), otherTasks(infos))
	}
	t.Fatalf("%s", b.String())
	return nil
}

func matchAll(matches []Match, info *client.RunInfo, input any) bool {
	for _, m := range matches {
		if !m.matches(info, input) {
			return false
		}
	}
	return true
}

func describe(matches []Match) string {
	if len(matches) == 0 {
		return ""
	}
	parts := make([]string, len(matches))
	for i, m := range matches {
		parts[i] = m.String()
	}
	return " with " + strings.Join(parts, " and ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// listedMax bounds how many runs a failure message lists.
const listedMax = 20

// listRuns describes runs, one a line, for a failure message.
func listRuns[I, O any](runs []*Run[I, O]) string {
	var b strings.Builder
	for i, r := range runs {
		if i == listedMax {
			fmt.Fprintf(&b, "\n  ... and %d more", len(runs)-listedMax)
			break
		}
		info := r.Info
		fmt.Fprintf(&b, "\n  %s  %s (attempt %d)", info.ID, info.Status, info.Attempt)
		if info.IdempotencyKey != "" {
			fmt.Fprintf(&b, "  key %q", info.IdempotencyKey)
		}
		fmt.Fprintf(&b, "  input %s", clip(string(info.Input)))
		if len(info.Metadata) > 0 && string(info.Metadata) != "{}" {
			fmt.Fprintf(&b, "  metadata %s", clip(string(info.Metadata)))
		}
		if info.Error != "" {
			fmt.Fprintf(&b, "  error %q", clip(info.Error))
		}
	}
	return b.String()
}

// otherTasks says which tasks were triggered, and how often.
func otherTasks(infos []*client.RunInfo) string {
	if len(infos) == 0 {
		return "no run of any task was"
	}
	count := map[string]int{}
	for _, info := range infos {
		count[info.Task]++
	}
	names := make([]string, 0, len(count))
	for name := range count {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%q (%s)", name, plural(count[name], "run"))
	}
	return "runs were triggered of " + strings.Join(parts, ", ")
}

// clip shortens s for a failure message.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
