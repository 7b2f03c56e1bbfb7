package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// scanCount is the page size of a keys listing (the COUNT hint of each
// SCAN call): big enough to page quickly, small enough not to stall Redis.
const scanCount = 500

// keyTTL shows the time left before a key expires.
func keyTTL(k *client.KeyInfo) string {
	if k.TTL <= 0 {
		return "no expiry"
	}
	return formatDuration(k.TTL)
}

// ownerStatusCell shows the owner's status, "unknown" when its record is
// gone (removed after its retention). -o json leaves the status out then.
func ownerStatusCell(k *client.KeyInfo) string {
	if k.OwnerStatus == "" {
		return "unknown"
	}
	return string(k.OwnerStatus)
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
  taskq keys release order:1001
  taskq keys signal order:1001 --data '{"approved":true}'`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.keysLsCmd(), a.keysGetCmd(), a.keysReleaseCmd(), a.keysSignalCmd())
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
			// As for runs ls: a --task that names nothing is a typo, exit 3.
			if taskName != "" && len(views) == 0 {
				if err := a.taskExists(ctx, c, taskName); err != nil {
					return err
				}
			}
			return a.printKeys(views)
		}),
	}
	cmd.Flags().StringVar(&match, "match", "", "only keys matching this glob (Redis MATCH syntax: * ? [abc])")
	cmd.Flags().StringVar(&taskName, "task", "", "only keys whose owner run belongs to this task")
	_ = cmd.RegisterFlagCompletionFunc("task", a.completeTasks)
	return cmd
}

// listKeys pages through the held keys, each with its owner, by the
// client's Inspector.
func (a *app) listKeys(ctx context.Context, c *client.Client, match, taskName string) ([]*client.KeyInfo, error) {
	in := c.Inspector()
	seen := map[string]bool{}
	var views []*client.KeyInfo
	prog := a.newProgress("reading keys:", 0)
	defer prog.Done()
	for cursor := ""; ; {
		page, err := in.ListKeys(ctx, client.ListOptions{Match: match, Cursor: cursor, Limit: scanCount})
		if err != nil {
			return nil, fmt.Errorf("listing keys: %w", err)
		}
		for _, k := range page.Items {
			// SCAN may return a key on more than one page.
			if !seen[k.Key] && (taskName == "" || k.Task == taskName) {
				views = append(views, k)
			}
			seen[k.Key] = true
		}
		prog.Add(len(page.Items))
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].Key < views[j].Key })
	return views, nil
}

// lookupKey reads a key's owner; ok is false when nobody holds the key.
func (a *app) lookupKey(ctx context.Context, c *client.Client, key string) (*client.KeyInfo, bool, error) {
	k, err := c.Inspector().GetKey(ctx, key)
	if errors.Is(err, client.ErrKeyNotHeld) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("key %q: %w", key, err)
	}
	return k, true, nil
}

func (a *app) printKeys(views []*client.KeyInfo) error {
	p := a.printer()
	if p.json() {
		return p.JSON(wire.KeysOf(views))
	}
	if len(views) == 0 {
		_, err := fmt.Fprintf(a.stdout, "No idempotency keys held in namespace %q.\n", a.namespace)
		return err
	}
	rows := make([][]string, len(views))
	for i, v := range views {
		rows[i] = []string{v.Key, v.OwnerRunID, orDash(v.Task), orDash(v.Strategy), ownerStatusCell(v), keyTTL(v)}
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
		Args:              argNames([]string{"KEY"}),
		ValidArgsFunction: a.completeKeys,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			v, ok, err := a.lookupKey(ctx, c, args[0])
			if err != nil {
				return err
			}
			if !ok {
				return &keyNotHeldError{key: args[0], ns: a.namespace}
			}
			p := a.printer()
			if p.json() {
				// The same body as GET /api/v1/keys/{key}.
				return p.JSON(wire.KeyOf(v))
			}
			f := [][2]string{
				{"Key", v.Key}, {"Owner run", v.OwnerRunID}, {"Task", v.Task}, {"Strategy", v.Strategy},
				{"Status", ownerStatusCell(v)}, {"TTL", keyTTL(v)},
			}
			if v.OwnerStatus != "" {
				r, err := c.Inspector().GetRun(ctx, v.OwnerRunID)
				switch {
				case errors.Is(err, client.ErrRunNotFound):
				case err != nil:
					return fmt.Errorf("key %q: owner run %s: %w", v.Key, v.OwnerRunID, err)
				default:
					f = append(f, [2]string{"Attempt", fmt.Sprint(r.Attempt)},
						[2]string{"Created", formatTime(r.CreatedAt)}, [2]string{"Finished", formatTimePtr(r.FinishedAt)})
				}
			}
			return p.Fields(f)
		}),
	}
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
		Args:              argNames([]string{"KEY"}),
		ValidArgsFunction: a.completeKeys,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			key := args[0]
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			v, ok, err := a.lookupKey(ctx, c, key)
			if err != nil {
				return err
			}
			if !ok {
				if owner != "" {
					return withCode(exitChanged, &keyChangedError{Key: key, Expected: owner})
				}
				return &keyNotHeldError{key: key, ns: a.namespace}
			}
			if owner != "" && v.OwnerRunID != owner {
				return withCode(exitChanged, &keyChangedError{Key: key, Expected: owner, Current: v.OwnerRunID})
			}
			if !yes {
				fmt.Fprintf(a.stderr, "Key %q is held by run %s (task %s, status %s, %s left).\n",
					key, clean(v.OwnerRunID), clean(orDash(v.Task)), clean(ownerStatusCell(v)), keyTTL(v))
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
			_, err = c.Inspector().ReleaseKey(ctx, key, v.OwnerRunID)
			var changed *client.StateError
			if errors.As(err, &changed) && errors.Is(changed.Kind, client.ErrKeyOwnerChanged) {
				return withCode(exitChanged, &keyChangedError{Key: key, Expected: v.OwnerRunID, Current: changed.Current})
			}
			if err != nil {
				return fmt.Errorf("release key %q: %w", key, err)
			}
			p := a.printer()
			if p.json() {
				return p.JSON(wire.Release{Key: key, RunID: v.OwnerRunID, Released: true})
			}
			_, err = fmt.Fprintf(a.stdout, "Released key %q (was held by run %s).\n", key, clean(v.OwnerRunID))
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
