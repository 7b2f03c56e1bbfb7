package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/auth"
	"github.com/taskq/taskq/internal/httpapi"
	"github.com/taskq/taskq/internal/webhook"
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
	// tokensFile and scopedTokens are the named tokens with scopes;
	// webhooksFile the signed webhook sources. SIGHUP reads the files
	// again.
	tokensFile   string
	scopedTokens []string
	webhooksFile string
	// tlsCert, tlsKey and tlsClientCA serve HTTPS (and mutual TLS);
	// secureCookie marks the dashboard's cookie Secure behind a proxy that
	// terminates TLS.
	tlsCert, tlsKey, tlsClientCA string
	secureCookie                 bool
}

// Environment variables of serve's settings (the defaults of its flags).
const (
	envTokensFile   = "TASKQ_TOKENS_FILE"
	envWebhooksFile = "TASKQ_WEBHOOKS_FILE"
	envTLSCert      = "TASKQ_TLS_CERT"
	envTLSKey       = "TASKQ_TLS_KEY"
	envTLSClientCA  = "TASKQ_TLS_CLIENT_CA"
)

// named reports whether serve has named tokens besides --token.
func (o serveOptions) named() bool { return o.tokensFile != "" || len(o.scopedTokens) > 0 }

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
  POST /api/v1/webhooks/{source}  a signed webhook from its sender (--webhooks-file)
  GET  /healthz, /readyz           liveness and readiness (no token)
  GET  /metrics                    Prometheus metrics
  GET  /ui/                        the web dashboard (sign in with the token)

Requests need "Authorization: Bearer <token>" of a token that holds the
route's scope: trigger, read, operate or admin (every scope). --token (or
$TASKQ_TOKEN) is a token with every scope, --read-only-token one with read;
--tokens-file and --scoped-token give named tokens stored as SHA-256 hashes
(see docs/security.md). --insecure serves without authentication, only on a
loopback address (--addr 127.0.0.1:8080).
--tls-cert and --tls-key serve HTTPS (TLS 1.2 or later); the certificate is
read again when its files change. --tls-client-ca asks every client for a
certificate that CA signed.
SIGHUP reads the tokens file, the webhook sources and the certificate again.
SIGINT or SIGTERM shuts the server down gracefully: in-flight requests get
--shutdown-timeout to finish.`,
		Example: `  TASKQ_TOKEN=$(openssl rand -hex 16) taskq serve --addr :8080
  taskq serve --tokens-file tokens.yaml --webhooks-file webhooks.yaml --tls-cert cert.pem --tls-key key.pem
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
			for _, e := range []struct {
				v   *string
				env string
			}{{&o.tokensFile, envTokensFile}, {&o.webhooksFile, envWebhooksFile}, {&o.tlsCert, envTLSCert}, {&o.tlsKey, envTLSKey}, {&o.tlsClientCA, envTLSClientCA}} {
				if *e.v == "" {
					*e.v = a.getenv(e.env)
				}
			}
			if o.token == "" && !o.named() && !o.insecure {
				return usageErrorf("no token: set --token or $%s, or pass --insecure to serve without authentication; or give named tokens with --tokens-file or --scoped-token", envToken)
			}
			if o.insecure && o.named() {
				return usageErrorf("--insecure serves without authentication: leave out --tokens-file and --scoped-token, or --insecure")
			}
			for _, v := range o.scopedTokens {
				if _, err := auth.ParseFlag("--scoped-token", v); err != nil {
					return usageErrorf("%v", err)
				}
			}
			if (o.tlsCert == "") != (o.tlsKey == "") {
				return usageErrorf("--tls-cert and --tls-key go together: give both, or neither")
			}
			if o.tlsClientCA != "" && o.tlsCert == "" {
				return usageErrorf("--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked over TLS")
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
			if o.token == "" && !o.named() {
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
			stop := reloadOnHangup(ctx, srv)
			defer stop()
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
	f.StringVar(&o.tokensFile, "tokens-file", "", "YAML or JSON file of named tokens with scopes, stored as SHA-256 hashes; read again on SIGHUP (default $"+envTokensFile+")")
	f.StringArrayVar(&o.scopedTokens, "scoped-token", nil, "a named token as NAME:SCOPE[,SCOPE]:SHA256 (scopes: trigger, read, operate, admin); repeatable")
	f.StringVar(&o.webhooksFile, "webhooks-file", "", "YAML or JSON file of signed webhook sources for POST /api/v1/webhooks/{source}; read again on SIGHUP (default $"+envWebhooksFile+")")
	f.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with; read again when it changes or on SIGHUP (default $"+envTLSCert+")")
	f.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert (default $"+envTLSKey+")")
	f.StringVar(&o.tlsClientCA, "tls-client-ca", "", "PEM certificate authorities: clients must present a certificate one of them signed (mutual TLS) (default $"+envTLSClientCA+")")
	f.BoolVar(&o.secureCookie, "secure-cookie", false, "mark the dashboard's cookie Secure on plain HTTP too, behind a proxy that terminates TLS")
	logFormatFlag(f, &o.logFormat)
	return cmd
}

// reloadOnHangup reads the tokens file, the webhook sources and the TLS
// certificate again on each SIGHUP until ctx ends or stop is called.
func reloadOnHangup(ctx context.Context, srv *httpapi.Server) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				_ = srv.Reload() // logged by Reload
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		cancel()
		<-done
	}
}

// keyring builds the named tokens of o: --token (every scope) and
// --read-only-token (read) under their flags' names, --scoped-token, and
// the tokens file. nil without any token (--insecure).
func keyring(o serveOptions) (*auth.Keyring, error) {
	var fixed []auth.Token
	if o.token != "" {
		fixed = append(fixed, httpapi.LegacyToken(httpapi.TokenName, o.token, auth.ScopeAdmin))
	}
	if o.readOnlyToken != "" {
		fixed = append(fixed, httpapi.LegacyToken(httpapi.ReadOnlyTokenName, o.readOnlyToken, auth.ScopeRead))
	}
	for _, v := range o.scopedTokens {
		t, err := auth.ParseFlag("--scoped-token", v)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		fixed = append(fixed, t)
	}
	if len(fixed) == 0 && o.tokensFile == "" {
		return nil, nil
	}
	return auth.NewKeyring(o.tokensFile, fixed...)
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
	keys, err := keyring(o)
	if err != nil {
		return nil, err
	}
	var hooks *webhook.Sources
	if o.webhooksFile != "" {
		if hooks, err = webhook.Load(o.webhooksFile, nil); err != nil {
			return nil, err
		}
	}
	var tlsOpts *httpapi.TLSOptions
	if o.tlsCert != "" {
		tlsOpts = &httpapi.TLSOptions{CertFile: o.tlsCert, KeyFile: o.tlsKey, ClientCAFile: o.tlsClientCA}
	}
	var ui http.Handler
	if !o.noUI {
		if ui, err = webui.New(webui.Options{Client: c, Token: o.token, ReadOnlyToken: o.readOnlyToken, Tokens: keys,
			Insecure: o.insecure, SecureCookie: o.secureCookie, Logger: log}); err != nil {
			return nil, err
		}
	}
	return httpapi.New(httpapi.Options{
		Client: c, Events: ing, Tokens: keys, Insecure: o.insecure, Webhooks: hooks, TLS: tlsOpts,
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
