package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/pkg/client"
)

// scanCount is the COUNT hint of each SCAN call: big enough to page
// quickly, small enough not to stall Redis.
const scanCount = 500

// lookupConcurrency bounds the Redis calls a listing has in flight.
const lookupConcurrency = 16

// keyView is one held idempotency key as the CLI shows it.
type keyView struct {
	Key   string `json:"key"`
	Owner string `json:"ownerRunId"`
	// Task, Strategy and Status come from the owner's run record; Status is
	// "unknown" when that record is gone (removed after its retention).
	Task     string `json:"task,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	Status   string `json:"status"`
	Attempt  int    `json:"attempt"`
	// ExpiresInMs is the time left before the key expires, 0 if it has no
	// expiry.
	ExpiresInMs int64           `json:"expiresInMs"`
	Run         *client.RunInfo `json:"run,omitempty"`
}

func (k *keyView) ttl() string {
	if k.ExpiresInMs <= 0 {
		return "no expiry"
	}
	return formatDuration(time.Duration(k.ExpiresInMs) * time.Millisecond)
}

func (a *app) keysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Inspect and release held idempotency keys",
		Long: `An idempotency key is held by the run that claimed it: for a ttl key until its
window ends, for a status key while the run is active (plus any retain). These
commands show who holds what and free a key by hand when an operator must.`,
		Example: `  taskq keys ls
  taskq keys get order:1001
  taskq keys release order:1001`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.keysLsCmd(), a.keysGetCmd(), a.keysReleaseCmd())
	return cmd
}

func (a *app) keysLsCmd() *cobra.Command {
	var match, taskName string
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List held idempotency keys with their owner run, its status and the time left",
		Long: `List the idempotency keys held in the namespace, sorted by key, with the run
that owns each, the owner's task, strategy and status, and the time left before
the key expires. Keys are paged with SCAN (never KEYS), so listing a large
namespace does not block Redis; on a terminal a progress line counts them.`,
		Example: `  taskq keys ls
  taskq keys ls --match 'order:*'
  taskq keys ls --task process-order -o json`,
		Args: argNames(nil),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			views, err := a.listKeys(ctx, c, match, taskName)
			if err != nil {
				return err
			}
			return a.printKeys(views)
		}),
	}
	cmd.Flags().StringVar(&match, "match", "", "only keys matching this glob (Redis MATCH syntax: * ? [abc])")
	cmd.Flags().StringVar(&taskName, "task", "", "only keys whose owner run belongs to this task")
	_ = cmd.RegisterFlagCompletionFunc("task", a.completeTasks)
	return cmd
}

// listKeys scans the held keys and looks up each one's owner.
func (a *app) listKeys(ctx context.Context, c *client.Client, match, taskName string) ([]*keyView, error) {
	st := c.Store()
	seen := map[string]bool{}
	var names []string
	prog := a.newProgress("scanning keys:", 0)
	var cursor uint64
	for {
		ks, next, err := st.ScanKeys(ctx, match, cursor, scanCount)
		if err != nil {
			prog.Done()
			return nil, fmt.Errorf("scanning keys: %w", err)
		}
		// SCAN may return a key more than once.
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
		prog.Add(len(ks))
		if cursor = next; cursor == 0 {
			break
		}
	}
	prog.Done()
	sort.Strings(names)

	views := make([]*keyView, len(names))
	prog = a.newProgress("reading owners:", len(names))
	err := forEach(ctx, len(names), func(ctx context.Context, i int) error {
		defer prog.Add(1)
		v, ok, err := a.lookupKey(ctx, c, names[i], false)
		if err != nil || !ok {
			return err // a key that expired since the scan is skipped
		}
		views[i] = v
		return nil
	})
	prog.Done()
	if err != nil {
		return nil, err
	}
	out := views[:0]
	for _, v := range views {
		if v != nil && (taskName == "" || v.Task == taskName) {
			out = append(out, v)
		}
	}
	return out, nil
}

// lookupKey reads a key's owner and the owner's run; ok is false when
// nobody holds the key.
func (a *app) lookupKey(ctx context.Context, c *client.Client, key string, withRun bool) (*keyView, bool, error) {
	ks, ok, err := c.Store().GetKey(ctx, key)
	if err != nil {
		return nil, false, fmt.Errorf("key %q: %w", key, err)
	}
	if !ok {
		return nil, false, nil
	}
	v := &keyView{Key: key, Owner: ks.Owner, Status: "unknown", ExpiresInMs: ks.TTL.Milliseconds()}
	info, err := c.GetRun(ctx, ks.Owner)
	switch {
	case errors.Is(err, client.ErrRunNotFound):
	case err != nil:
		return nil, false, fmt.Errorf("key %q: owner run %s: %w", key, ks.Owner, err)
	default:
		v.Task, v.Strategy, v.Status, v.Attempt = info.Task, info.Strategy, string(info.Status), info.Attempt
		if withRun {
			v.Run = runJSON(info)
		}
	}
	return v, true, nil
}

func (a *app) printKeys(views []*keyView) error {
	p := a.printer()
	if p.json() {
		if views == nil {
			views = []*keyView{}
		}
		return p.JSON(views)
	}
	if len(views) == 0 {
		_, err := fmt.Fprintf(a.stdout, "No idempotency keys held in namespace %q.\n", a.namespace)
		return err
	}
	rows := make([][]string, len(views))
	for i, v := range views {
		rows[i] = []string{v.Key, v.Owner, orDash(v.Task), orDash(v.Strategy), v.Status, v.ttl()}
	}
	return p.Table([]string{"KEY", "OWNER RUN", "TASK", "STRATEGY", "STATUS", "TTL"}, rows)
}

func (a *app) keysGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get KEY",
		Short: "Show who holds an idempotency key, and for how long",
		Long: `Show the run holding KEY, that run's task, strategy and status, and the time
left before the key expires. Exits with code 3 when nobody holds the key.`,
		Example: `  taskq keys get order:1001
  taskq keys get 'webhook:evt_1' -o json`,
		Args: argNames([]string{"KEY"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			v, ok, err := a.lookupKey(ctx, c, args[0], true)
			if err != nil {
				return err
			}
			if !ok {
				return &keyNotHeldError{key: args[0], ns: a.namespace}
			}
			p := a.printer()
			if p.json() {
				return p.JSON(v)
			}
			f := [][2]string{
				{"Key", v.Key}, {"Owner run", v.Owner}, {"Task", v.Task}, {"Strategy", v.Strategy},
				{"Status", v.Status}, {"TTL", v.ttl()},
			}
			if r := v.Run; r != nil {
				f = append(f, [2]string{"Attempt", fmt.Sprint(r.Attempt)},
					[2]string{"Created", formatTime(r.CreatedAt)}, [2]string{"Finished", formatTimePtr(r.FinishedAt)})
			}
			return p.Fields(f)
		}),
	}
}

// releaseView is the outcome of keys release.
type releaseView struct {
	Key      string `json:"key"`
	Owner    string `json:"ownerRunId"`
	Released bool   `json:"released"`
}

// keyNotHeldError says nobody holds a key (exit code 3).
type keyNotHeldError struct{ key, ns string }

func (e *keyNotHeldError) Error() string {
	return fmt.Sprintf("idempotency key %q is not held in namespace %q", e.key, e.ns)
}

// Is makes errors.Is(err, errNotFound) hold.
func (e *keyNotHeldError) Is(target error) bool { return target == errNotFound }

// keyChangedError says a key is no longer held by the run the operator saw.
type keyChangedError struct {
	Key, Expected, Current string
}

func (e *keyChangedError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("key %q is no longer held by run %s (it was freed meanwhile); nothing released", e.Key, e.Expected)
	}
	return fmt.Sprintf("key %q is now held by run %s, not by run %s; nothing released", e.Key, e.Current, e.Expected)
}

func (a *app) keysReleaseCmd() *cobra.Command {
	var yes bool
	var owner string
	cmd := &cobra.Command{
		Use:   "release KEY",
		Short: "Free an idempotency key, only if it is still held by the run you saw",
		Long: `Free KEY so that the next trigger with that key is accepted. The owner run is
shown and the release must be confirmed (unless --yes). The release is a
compare-and-delete on the owner: if the key changed owner after it was read
(or after you listed it, with --owner), nothing is released and the command
exits with code 5. Releasing does not stop the owner run; a status-strategy run
that is still active could then run alongside a duplicate.`,
		Example: `  taskq keys release order:1001
  # release only if still held by the run seen in 'taskq keys ls'
  taskq keys release order:1001 --owner 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 --yes`,
		Args: argNames([]string{"KEY"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			key := args[0]
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			v, ok, err := a.lookupKey(ctx, c, key, false)
			if err != nil {
				return err
			}
			if !ok {
				if owner != "" {
					return withCode(exitChanged, &keyChangedError{Key: key, Expected: owner})
				}
				return &keyNotHeldError{key: key, ns: a.namespace}
			}
			if owner != "" && v.Owner != owner {
				return withCode(exitChanged, &keyChangedError{Key: key, Expected: owner, Current: v.Owner})
			}
			if !yes {
				fmt.Fprintf(a.stderr, "Key %q is held by run %s (task %s, status %s, %s left).\n",
					key, clean(v.Owner), clean(orDash(v.Task)), clean(v.Status), v.ttl())
				fmt.Fprint(a.stderr, "Release it? [y/N] ")
				ok := confirmed(a.stdin)
				if !a.stdinTTY {
					// The answer was not echoed: end the prompt's line.
					fmt.Fprintln(a.stderr)
				}
				if !ok {
					return errors.New("not confirmed; nothing released (pass --yes to skip the question)")
				}
			}
			released, err := c.Store().ReleaseKey(ctx, key, v.Owner)
			if err != nil {
				return fmt.Errorf("release key %q: %w", key, err)
			}
			if !released {
				now, _, _ := c.Store().GetKey(ctx, key)
				return withCode(exitChanged, &keyChangedError{Key: key, Expected: v.Owner, Current: now.Owner})
			}
			p := a.printer()
			if p.json() {
				return p.JSON(releaseView{Key: key, Owner: v.Owner, Released: true})
			}
			_, err = fmt.Fprintf(a.stdout, "Released key %q (was held by run %s).\n", key, clean(v.Owner))
			return err
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().StringVar(&owner, "owner", "", "release only if this run still holds the key")
	return cmd
}

// confirmed reads one answer line and reports whether it is yes.
func confirmed(in io.Reader) bool {
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// forEach calls fn for 0..n-1 with at most lookupConcurrency calls at once
// and returns the first error; it stops starting calls after one fails.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, lookupConcurrency)
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}(i)
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		// The caller's context ended.
		return context.Cause(ctx)
	}
	return first
}
