package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/httpapi"
	"github.com/taskq/taskq/internal/webui"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// serveOptions are the flags of serve (and the HTTP part of dev).
type serveOptions struct {
	addr           string
	token          string
	insecure       bool
	maxBodyBytes   int64
	maxBatch       int
	eventRetention time.Duration
	maxWait        time.Duration
	shutdown       time.Duration
	readTimeout    time.Duration
	writeTimeout   time.Duration
	maxConns       int
	logLevel       string
	logFormat      string
	// readOnlyToken signs in to the dashboard to see but not act; noUI
	// serves the API without the dashboard.
	readOnlyToken string
	noUI          bool
}

// envReadOnlyToken is the default of --read-only-token.
const envReadOnlyToken = "TASKQ_READONLY_TOKEN"

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, usageErrorf("invalid --log-level %q: use debug, info, warn or error", s)
	}
	return l, nil
}

func (a *app) serveCmd() *cobra.Command {
	o := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API: trigger runs, read results, ingest events",
		Long: `Serve the HTTP API on --addr:

  POST /api/v1/tasks/{task}/runs   trigger a run: 201 {runId}, or 409 with existingRunId
  GET  /api/v1/tasks               registered tasks
  GET  /api/v1/runs/{id}           a run's state
  GET  /api/v1/runs/{id}/result    its result (?wait=30s waits for it)
  POST /api/v1/runs/{id}/cancel    cancel a run
  GET  /api/v1/keys/{key}          who holds an idempotency key
  POST /api/v1/events              ingest an event (or a batch)
  GET  /api/v1/events/{id}         an event and the runs it created
  GET  /healthz, /readyz           liveness and readiness (no token)
  GET  /metrics                    Prometheus metrics
  GET  /ui/                        the web dashboard (sign in with the token)

Requests need "Authorization: Bearer <token>" with the token from --token or
$TASKQ_TOKEN: at least 16 visible ASCII characters, no whitespace.
--insecure serves without authentication, only on a loopback address
(--addr 127.0.0.1:8080).
SIGINT or SIGTERM shuts the server down gracefully: in-flight requests get
--shutdown-timeout to finish.`,
		Example: `  TASKQ_TOKEN=$(openssl rand -hex 16) taskq serve --addr :8080
  taskq serve --addr 127.0.0.1:8080 --insecure --log-level debug`,
		Args: argNames(nil),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if _, err := parseLevel(o.logLevel); err != nil {
				return err
			}
			if err := checkLogFormat(o.logFormat); err != nil {
				return err
			}
			if o.token == "" {
				o.token = a.getenv(envToken)
			}
			if o.token == "" && !o.insecure {
				return usageErrorf("no token: set --token or $%s, or pass --insecure to serve without authentication", envToken)
			}
			if err := httpapi.CheckToken(o.token); err != nil {
				return usageErrorf("%s", strings.TrimPrefix(err.Error(), "httpapi: "))
			}
			if o.readOnlyToken == "" {
				o.readOnlyToken = a.getenv(envReadOnlyToken)
			}
			if err := checkReadOnlyToken(o); err != nil {
				return err
			}
			if o.token == "" {
				if err := httpapi.CheckInsecureAddr(o.addr); err != nil {
					return usageErrorf("%s", strings.TrimPrefix(err.Error(), "httpapi: "))
				}
			}
			if o.maxBodyBytes < 0 || o.maxBatch < 0 || o.eventRetention < 0 || o.maxWait < 0 || o.shutdown < 0 ||
				o.readTimeout < 0 || o.writeTimeout < 0 || o.maxConns < 0 {
				return usageErrorf("--max-body-bytes, --max-batch, --event-retention, --max-wait, --shutdown-timeout, --read-timeout, --write-timeout and --max-connections must not be negative")
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			level, _ := parseLevel(o.logLevel)
			log := a.newLog(o.logFormat, level)
			a.log = log
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			ln, err := listen(o.addr)
			if err != nil {
				return err
			}
			srv, err := newServer(c, o, log)
			if err != nil {
				_ = ln.Close()
				return err
			}
			return srv.Serve(ctx, ln)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", ":8080", "address to listen on")
	f.StringVar(&o.token, "token", "", "bearer token clients must send (default $"+envToken+")")
	f.BoolVar(&o.insecure, "insecure", false, "serve without authentication")
	f.Int64Var(&o.maxBodyBytes, "max-body-bytes", 0, "largest request body accepted (0: the server's default)")
	f.IntVar(&o.maxBatch, "max-batch", 0, "most events per ingestion request (0: the server's default)")
	f.DurationVar(&o.eventRetention, "event-retention", 0, "how long ingested events are kept (0: the default, 7 days)")
	f.DurationVar(&o.maxWait, "max-wait", 0, "longest ?wait= a result request may block (0: the server's default, 30s)")
	f.DurationVar(&o.shutdown, "shutdown-timeout", 0, "how long in-flight requests may finish at shutdown (0: the server's default, 30s)")
	f.DurationVar(&o.readTimeout, "read-timeout", 0, "longest a request's headers and body may take to arrive (0: the server's default, 30s)")
	f.DurationVar(&o.writeTimeout, "write-timeout", 0, "longest an answer may take, a result's ?wait= on top (0: the server's default, 30s)")
	f.IntVar(&o.maxConns, "max-connections", 0, "most connections served at once; more wait their turn (0: the server's default, 1024)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.readOnlyToken, "read-only-token", "", "a second token that signs in to the dashboard (/ui/) to see but not act (default $"+envReadOnlyToken+")")
	f.BoolVar(&o.noUI, "no-ui", false, "serve the HTTP API without the web dashboard under /ui/")
	logFormatFlag(f, &o.logFormat)
	return cmd
}

// checkReadOnlyToken checks --read-only-token as the token is checked.
func checkReadOnlyToken(o serveOptions) error {
	switch {
	case o.readOnlyToken == "":
		return nil
	case o.token == "":
		return usageErrorf("--read-only-token needs --token: without a token, every visitor may act")
	case o.readOnlyToken == o.token:
		return usageErrorf("--read-only-token must differ from --token")
	}
	if err := httpapi.CheckToken(o.readOnlyToken); err != nil {
		msg := strings.TrimPrefix(err.Error(), "httpapi: ")
		return usageErrorf("%s", strings.Replace(msg, "the API token ("+httpapi.TokenFlag+" or "+httpapi.TokenEnv+")", "the read-only token (--read-only-token or $"+envReadOnlyToken+")", 1))
	}
	return nil
}

// newServer builds the HTTP API on client c.
func newServer(c *client.Client, o serveOptions, log *slog.Logger) (*httpapi.Server, error) {
	ing, err := events.New(c, events.Options{Retention: o.eventRetention, MaxBatch: o.maxBatch, Logger: log})
	if err != nil {
		return nil, err
	}
	var ui http.Handler
	if !o.noUI {
		if ui, err = webui.New(webui.Options{Client: c, Token: o.token, ReadOnlyToken: o.readOnlyToken, Insecure: o.insecure, Logger: log}); err != nil {
			return nil, err
		}
	}
	return httpapi.New(httpapi.Options{
		Client: c, Events: ing, Token: o.token, Insecure: o.insecure,
		MaxBodyBytes: o.maxBodyBytes, MaxBatch: o.maxBatch, MaxWait: o.maxWait, ShutdownTimeout: o.shutdown,
		ReadTimeout: o.readTimeout, WriteTimeout: o.writeTimeout, MaxConnections: o.maxConns, UI: ui, Logger: log,
	})
}

// listen opens addr and explains the usual failure.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if strings.Contains(err.Error(), "address already in use") {
			return nil, fmt.Errorf("listen on %s: the address is in use; choose another with --addr", addr)
		}
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// serveUntil runs srv until ctx ends and reports how it stopped.
func serveUntil(ctx context.Context, srv *httpapi.Server, ln net.Listener) <-chan error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return done
}
