package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/pkg/client"
)

// Environment variables read for flag defaults.
const (
	envRedisURL   = client.RedisURLEnv // TASKQ_REDIS_URL
	envNamespace  = "TASKQ_NAMESPACE"
	envPartitions = "TASKQ_PARTITIONS"
	envToken      = "TASKQ_TOKEN"
	envNoColor    = "NO_COLOR"
	// envCompleteTimeout replaces completeTimeout (a Go duration), for a
	// Redis far away.
	envCompleteTimeout = "TASKQ_COMPLETE_TIMEOUT"
)

// Output formats of -o.
const (
	formatTable = "table"
	formatJSON  = "json"
)

// streams is the process's I/O as the commands see it: tests substitute
// buffers and say which of them is a terminal.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// A terminal gets progress, colours and confirmation prompts; a pipe
	// gets none of them.
	stdinTTY, stdoutTTY, stderrTTY bool
}

// osStreams returns the real process streams.
func osStreams() streams {
	return streams{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		stdinTTY: isTerminal(os.Stdin), stdoutTTY: isTerminal(os.Stdout), stderrTTY: isTerminal(os.Stderr),
	}
}

// isTerminal reports whether f is a character device, which is what a
// terminal is; pipes and files are not.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// app holds one invocation's global flags, streams and lazily opened
// connections.
type app struct {
	streams
	version buildVersion

	// global flags
	redisURL  string
	namespace string
	// partitions is the namespace's partition count (0: adopt it).
	partitions int
	output     string
	noColor    bool
	// allowEvicting accepts a Redis whose maxmemory-policy may evict keys.
	allowEvicting bool
	// skipDurability ignores durable acknowledgement: dev on its
	// embedded Redis, which has no replicas.
	skipDurability bool
	// log is the log of a long-running command (serve, dev), set before
	// it connects: the client logs there, and go-redis's own lines go
	// there too. Other commands leave go-redis's lines dropped (main).
	log *slog.Logger

	// started is set once a command's own code runs: an error before that
	// came from parsing flags or arguments and is a usage error.
	started bool

	mu      sync.Mutex
	cli     *client.Client
	closers []func() error
}

// run executes the CLI with args and returns the exit code.
func run(ctx context.Context, args []string, s streams, version buildVersion) int {
	a := &app{streams: s, version: version}
	defer a.close()
	root := a.newRoot()
	root.SetArgs(args)
	root.SetIn(s.stdin)
	root.SetOut(s.stdout)
	root.SetErr(s.stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if !a.started {
		var ce *codeError
		if !errors.As(err, &ce) {
			err = &codeError{code: exitUsage, err: err}
		}
	}
	code := exitCode(err)
	a.printError(cmd, err, code)
	return code
}

// printError writes err to stderr; usage errors point at --help.
func (a *app) printError(cmd *cobra.Command, err error, code int) {
	prefix := "error: "
	if a.colorOn(a.stderrTTY) {
		prefix = ansiRed + "error:" + ansiReset + " "
	}
	// An error may quote a key, a value or the Redis URL: its password is
	// hidden and what does not print is escaped.
	msg := clean(redactIn(err.Error(), a.redisURL))
	fmt.Fprintln(a.stderr, prefix+msg)
	var detail interface{ Detail() string }
	if errors.As(err, &detail) {
		if d := detail.Detail(); d != "" {
			fmt.Fprintln(a.stderr, cleanLines(redactIn(d, a.redisURL)))
		}
	}
	if code == exitUsage && cmd != nil {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}

// close releases what the command opened.
func (a *app) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.closers) - 1; i >= 0; i-- {
		_ = a.closers[i]()
	}
	a.closers = nil
	a.cli = nil
}

// logger is where library logs go: warnings and errors only, on stderr,
// so command output stays clean.
func (a *app) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stderr, a.logOptions(slog.LevelWarn)))
}

// logOptions are the options of every log handler the CLI makes: records
// at level and above, with the Redis URL's password hidden wherever a
// message or attribute quotes it.
func (a *app) logOptions(level slog.Leveler) *slog.HandlerOptions {
	return &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, attr slog.Attr) slog.Attr {
		switch v := attr.Value.Resolve(); v.Kind() {
		case slog.KindString:
			if s := v.String(); strings.Contains(s, "@") {
				attr.Value = slog.StringValue(redactIn(s, a.redisURL))
			}
		case slog.KindAny:
			if err, ok := v.Any().(error); ok {
				attr.Value = slog.StringValue(redactIn(err.Error(), a.redisURL))
			}
		}
		return attr
	}}
}

// client connects to Redis once per invocation and checks that it answers,
// so an unreachable Redis is one clear error rather than a timeout deep in
// a command.
func (a *app) client(ctx context.Context) (*client.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cli != nil {
		return a.cli, nil
	}
	if a.redisURL == "" {
		a.redisURL = a.envOr(envRedisURL, client.RedisURLDefault)
	}
	logger, keepRedisLog := a.logger(), true
	if a.log != nil {
		logger, keepRedisLog = a.log, false
	}
	c, err := client.New(client.Options{RedisURL: a.redisURL, Namespace: a.namespace, Partitions: a.partitions,
		Logger: logger, KeepRedisLogger: keepRedisLog, AllowEvictingRedis: a.allowEvicting, SkipDurability: a.skipDurability})
	if errors.Is(err, client.ErrEvictingRedis) || errors.Is(err, client.ErrPartitionsMismatch) {
		return nil, errors.Unwrap(err) // Redis answered: not a usage error
	}
	if errors.Is(err, client.ErrInvalidNamespace) {
		return nil, usageErrorf("--namespace: %s", errors.Unwrap(err))
	}
	if err != nil {
		// The cause may quote the URL as given (net/url does).
		return nil, usageErrorf("--redis %s: %s", redactURL(a.redisURL), redactIn(errors.Unwrap(err).Error(), a.redisURL))
	}
	if err := c.Ping(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %w", redactURL(a.redisURL), &redactedError{err: err, url: a.redisURL})
	}
	a.cli = c
	a.closers = append(a.closers, c.Close)
	return c, nil
}

// redactURL hides the password of a Redis URL before it is printed, as
// redis://:xxxxx@host:6379/0, also when the URL does not parse: the text
// between the first ':' of its user information and its last '@' is
// hidden then.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
		return raw
	}
	start, end, ok := passwordSpan(raw)
	if !ok {
		return raw
	}
	return raw[:start] + "xxxxx" + raw[end:]
}

// passwordSpan locates the password in raw, which need not parse.
func passwordSpan(raw string) (start, end int, ok bool) {
	authority := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		authority = i + len("://")
	}
	at := strings.LastIndex(raw[authority:], "@")
	if at < 0 {
		return 0, 0, false
	}
	colon := strings.Index(raw[authority:authority+at], ":")
	if colon < 0 {
		return 0, 0, false // a user name only
	}
	return authority + colon + 1, authority + at, true
}

// redactIn hides the password of the Redis URL raw wherever text quotes
// the URL, as it was given or escaped by %q.
func redactIn(text, raw string) string {
	start, end, ok := passwordSpan(raw)
	if !ok || start == end {
		return text
	}
	password := raw[start:end]
	for _, form := range []string{password, strings.Trim(strconv.Quote(password), `"`), url.UserPassword("", password).String()[1:]} {
		if form != "" {
			text = strings.ReplaceAll(text, ":"+form+"@", ":xxxxx@")
		}
	}
	return text
}

// redactedError is err with the Redis URL's password hidden from its
// message; errors.Is and errors.As still see err.
type redactedError struct {
	err error
	url string
}

func (e *redactedError) Error() string { return redactIn(e.err.Error(), e.url) }
func (e *redactedError) Unwrap() error { return e.err }

// printer returns the writer of command output in the chosen format.
func (a *app) printer() *printer {
	return &printer{w: a.stdout, format: a.output, color: a.colorOn(a.stdoutTTY) && a.output == formatTable}
}

// colorOn reports whether a stream gets colours: a terminal, no
// --no-color and no NO_COLOR in the environment.
func (a *app) colorOn(tty bool) bool {
	return tty && !a.noColor && a.getenv(envNoColor) == ""
}

// action wraps a command's code: from here on an error is the command's,
// not a usage error.
func (a *app) action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.started = true
		return fn(cmd, args)
	}
}

// envOr returns the environment variable name's value, or def.
func (a *app) envOr(name, def string) string {
	if v := a.getenv(name); v != "" {
		return v
	}
	return def
}

// groupRun makes a command group print its help when called alone and
// name an unknown subcommand as a usage error.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra sets this on the root only
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usageErrorf("%s", msg)
}

// argNames checks the positional arguments against the names a command
// takes, so a usage error says which one is missing or extra.
func argNames(required []string, optional ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(required) {
			return usageErrorf("%s: missing argument %s", cmd.CommandPath(), strings.Join(required[len(args):], " "))
		}
		if max := len(required) + len(optional); len(args) > max {
			return usageErrorf("%s: unexpected argument %q", cmd.CommandPath(), args[max])
		}
		return nil
	}
}
