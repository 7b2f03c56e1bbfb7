package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redistest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/cli")

// binPath is the taskq binary built once for the tests that run it as a
// real process.
var binPath string

func TestMain(m *testing.M) {
	flag.Parse()
	redis.SetLogger(discardLogger{})
	dir, err := os.MkdirTemp("", "taskq-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "taskq")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildOnce sync.Once
var buildErr error

// taskqBinary builds the CLI (once per test binary) with a version stamp and
// without VCS information, so that the stamp is the version it reports.
func taskqBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X main.version=v0.0.0-test", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// result is what one invocation printed and returned.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

// invocation configures one in-process run of the CLI.
type invocation struct {
	stdin  io.Reader
	tty    bool              // all three streams are terminals
	env    map[string]string // the environment (empty by default)
	stdout *redistest.LogBuffer
	stderr *redistest.LogBuffer
}

// runWith runs the CLI in-process with no environment variables.
func runWith(ctx context.Context, inv invocation, args ...string) result {
	if inv.stdin == nil {
		inv.stdin = strings.NewReader("")
	}
	if inv.stdout == nil {
		inv.stdout = &redistest.LogBuffer{}
	}
	if inv.stderr == nil {
		inv.stderr = &redistest.LogBuffer{}
	}
	s := streams{
		stdin: inv.stdin, stdout: inv.stdout, stderr: inv.stderr,
		getenv:   func(k string) string { return inv.env[k] },
		stdinTTY: inv.tty, stdoutTTY: inv.tty, stderrTTY: inv.tty,
	}
	code := run(ctx, args, s, buildVersion{Version: "v0.0.0-test"})
	return result{args: args, stdout: inv.stdout.String(), stderr: inv.stderr.String(), code: code}
}

// cli runs the CLI against one backend's namespace.
type cli struct {
	t   *testing.T
	url string
	ns  string
}

func newCLI(t *testing.T, b *redistest.Backend) *cli {
	if b.IsCluster() {
		return &cli{t: t, url: b.URL, ns: b.Namespace}
	}
	opt := b.Client.(*redis.Client).Options()
	return &cli{t: t, url: fmt.Sprintf("redis://%s/%d", opt.Addr, opt.DB), ns: b.Namespace}
}

func (c *cli) args(args []string) []string {
	return append([]string{"--redis", c.url, "--namespace", c.ns}, args...)
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	r := runWith(context.Background(), invocation{}, c.args(args)...)
	r.args = args
	return r
}

func (c *cli) runIn(stdin string, args ...string) result {
	c.t.Helper()
	r := runWith(context.Background(), invocation{stdin: strings.NewReader(stdin)}, c.args(args)...)
	r.args = args
	return r
}

// --- golden files ------------------------------------------------------------

// normalizer replaces what changes from run to run (IDs, times, time
// left) with labels. In tables a label is padded to the width of what it
// replaces, so the golden file keeps the real column alignment.
type normalizer struct {
	labels map[string]string // run or event ID -> label
	ns     string            // the test's namespace
}

var (
	uuidRe     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	tableTime  = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	jsonTime   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	keyRow     = regexp.MustCompile(`(?m)^((order|webhook):\S+ .*?)  (\d+h)?(\d+m)?\d+(ms|s|m|h)$`)
	ttlField   = regexp.MustCompile(`(?m)^(TTL: +)\S+`)
	keyTTLMs   = regexp.MustCompile(`"ttlMs": \d+,(\s+"expiresAt")`) // a held key's, not a task spec's
	timeLeft   = regexp.MustCompile(`, (\d+h)?(\d+m)?\d+(ms|s|m|h) left\)`)
	chargeID   = regexp.MustCompile(`ch_[0-9a-f]{16}`)
	workerName = regexp.MustCompile(`taskq-dev-[0-9a-f]{4}`)
	trailingWS = regexp.MustCompile(`(?m)[ \t]+$`)
	nextCursor = regexp.MustCompile(`--cursor [A-Za-z0-9_-]+`)
)

func pad(label string, width int) string {
	if len(label) >= width {
		return label
	}
	return label + strings.Repeat(" ", width-len(label))
}

func (n *normalizer) apply(s string, padded bool) string {
	width := func(label string, w int) string {
		if padded {
			return pad(label, w)
		}
		return label
	}
	ids := make([]string, 0, len(n.labels))
	for id := range n.labels {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s = replaceID(s, id, n.labels[id], padded)
	}
	// IDs the test did not name are numbered in order of appearance.
	seen := map[string]string{}
	label := func(id string) string {
		l, ok := seen[id]
		if !ok {
			l = fmt.Sprintf("<id-%d>", len(seen)+1)
			seen[id] = l
		}
		return l
	}
	for _, id := range uuidRe.FindAllString(s, -1) {
		s = replaceID(s, id, label(id), padded)
	}
	s = tableTime.ReplaceAllStringFunc(s, func(m string) string { return width("<time>", len(m)) })
	s = jsonTime.ReplaceAllString(s, "<time>")
	// Time left on a key: the last column of keys ls, the TTL line of
	// keys get, ttlMs in JSON and the release prompt.
	s = keyRow.ReplaceAllString(s, "${1}  <ttl>")
	s = ttlField.ReplaceAllString(s, "${1}<ttl>")
	s = keyTTLMs.ReplaceAllString(s, `"ttlMs": "<ttl>",$1`)
	s = timeLeft.ReplaceAllString(s, ", <ttl> left)")
	s = chargeID.ReplaceAllString(s, "ch_<charge>")
	s = workerName.ReplaceAllString(s, "taskq-dev-<id>")
	s = nextCursor.ReplaceAllString(s, "--cursor <cursor>")
	if n.ns != "" {
		s = strings.ReplaceAll(s, n.ns, "<namespace>")
	}
	return trailingWS.ReplaceAllString(s, "")
}

// replaceID puts label in place of every occurrence of id. A table cell
// (followed by two spaces) is padded to the ID's width so the columns stay
// aligned; anywhere else the label stands alone.
func replaceID(s, id, label string, padded bool) string {
	var b strings.Builder
	for {
		i := strings.Index(s, id)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len(id):]
		if padded && strings.HasPrefix(s, "  ") {
			b.WriteString(pad(label, len(id)))
		} else {
			b.WriteString(label)
		}
	}
}

// render turns a result into the text of its golden file.
func (n *normalizer) render(r result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d\n", r.code)
	fmt.Fprintf(&b, "--- stdout\n%s", r.stdout)
	if r.stderr != "" {
		fmt.Fprintf(&b, "--- stderr\n%s", r.stderr)
	}
	return n.apply("$ taskq "+strings.Join(quoteArgs(r.args), " ")+"\n", false) + n.apply(b.String(), true)
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \"'*[]{}$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

// golden compares got with testdata/cli/<name>.golden, or rewrites the
// file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "cli", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/taskq -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (go test ./cmd/taskq -update rewrites it)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
