package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/taskq/taskq/internal/clientlink"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/netutil"

	"github.com/taskq/taskq/internal/auth"
	"github.com/taskq/taskq/internal/webhook"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// Defaults and limits of Options.
const (
	MaxBodyBytesDefault    = 1 << 20
	MaxWaitDefault         = 30 * time.Second
	ShutdownTimeoutDefault = 30 * time.Second
	// ReadHeaderTimeoutDefault bounds the reading of a request's headers.
	ReadHeaderTimeoutDefault = 10 * time.Second
	// ReadTimeoutDefault bounds the reading of a whole request, headers
	// and body: a client that sends its body too slowly is cut off.
	ReadTimeoutDefault = 30 * time.Second
	// WriteTimeoutDefault bounds the answer of a request, from the end of
	// its headers. A long-poll of a run's result gets its wait on top.
	WriteTimeoutDefault = 30 * time.Second
	// IdleTimeoutDefault is how long a kept-alive connection may wait for
	// its next request.
	IdleTimeoutDefault = 60 * time.Second
	// MaxHeaderBytesDefault bounds a request's line and headers.
	MaxHeaderBytesDefault = 64 << 10
	// MaxConnectionsDefault bounds the connections served at once; more
	// wait in the listen queue until one closes.
	MaxConnectionsDefault = 1024
)

// Names the taskq CLI gives the settings of `taskq serve`; errors quote them
// so the operator knows what to change.
const (
	TokenFlag    = "--token"
	TokenEnv     = "TASKQ_TOKEN"
	InsecureFlag = "--insecure"
)

// ErrNoToken matches *NoTokenError.
var ErrNoToken = errors.New("no API token configured")

// NoTokenError is returned by New when no token is configured and the
// insecure development mode was not asked for.
type NoTokenError struct{}

func (*NoTokenError) Error() string {
	return fmt.Sprintf("httpapi: no API token configured: set one with %s or %s, or pass %s to serve without authentication (development only)",
		TokenFlag, TokenEnv, InsecureFlag)
}

// Is makes errors.Is(err, ErrNoToken) hold.
func (*NoTokenError) Is(target error) bool { return target == ErrNoToken }

// Options configure a Server. Zero values mean the documented defaults.
type Options struct {
	// Client triggers and reads runs (required).
	Client *client.Client
	// Events ingests events (default: an ingester on Client with default
	// options).
	Events *events.Ingester
	// Token is a bearer token with every scope (the token named "token"):
	// every /api/ route and /metrics require a token.
	Token string
	// Tokens are the named, scoped tokens (internal/auth), instead of
	// Token: set one or the other (LegacyToken turns a plain token into an
	// entry of the keyring). Reload reads their file again.
	Tokens *auth.Keyring
	// Webhooks are the signed webhook sources of POST
	// /api/v1/webhooks/{source}; Reload reads their file again.
	Webhooks *webhook.Sources
	// TLS, when set, makes Serve answer HTTPS only.
	TLS *TLSOptions
	// Insecure serves without a token. For development only.
	Insecure bool
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	// MaxBatch bounds the events of one push and the runs of one bulk
	// trigger (default: the ingester's MaxBatch).
	MaxBatch int
	// MaxWait bounds the long-poll of a run's result (default 30s); a
	// longer ?wait= is cut to it.
	MaxWait time.Duration
	// ShutdownTimeout is how long Serve lets in-flight requests finish once
	// its context ends (default 30s). Long-polls still waiting then answer
	// with the run's current state.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// connection deadlines of Serve (defaults: the XxxDefault constants).
	// ReadTimeout covers headers and body together, so that a client
	// trickling its body is cut off; the result long-poll extends its own
	// write deadline by its wait.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// MaxHeaderBytes bounds a request's line and headers (default 64 KiB);
	// a larger one is answered 431 by net/http.
	MaxHeaderBytes int
	// MaxConnections bounds the connections Serve holds open at once
	// (default 1024): past it, new connections wait in the listen queue
	// until one closes, so that a flood of slow clients cannot use up the
	// process's file descriptors.
	MaxConnections int
	// UI, when set, is served under /ui/ (the web dashboard,
	// internal/webui), which signs its visitors in itself: the bearer
	// token of the API routes does not apply there.
	UI     http.Handler
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Events == nil && o.Client != nil {
		ing, err := events.New(o.Client, events.Options{Logger: o.Logger})
		if err != nil {
			return o, err
		}
		o.Events = ing
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = MaxBodyBytesDefault
	}
	if o.MaxBatch == 0 && o.Events != nil {
		o.MaxBatch = events.MaxBatchDefault
	}
	if o.MaxWait == 0 {
		o.MaxWait = MaxWaitDefault
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = ShutdownTimeoutDefault
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&o.ReadHeaderTimeout, ReadHeaderTimeoutDefault}, {&o.ReadTimeout, ReadTimeoutDefault},
		{&o.WriteTimeout, WriteTimeoutDefault}, {&o.IdleTimeout, IdleTimeoutDefault},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = MaxHeaderBytesDefault
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = MaxConnectionsDefault
	}
	return o, nil
}

func (o Options) validate() error {
	switch {
	case o.Client == nil:
		return errors.New("httpapi: Options.Client is required")
	case o.Token == "" && o.Tokens == nil && !o.Insecure:
		return &NoTokenError{}
	case CheckToken(o.Token) != nil:
		return CheckToken(o.Token)
	case o.MaxBodyBytes < 0:
		return fmt.Errorf("httpapi: MaxBodyBytes %d must not be negative", o.MaxBodyBytes)
	case o.MaxBatch < 1:
		return fmt.Errorf("httpapi: MaxBatch %d must be at least 1", o.MaxBatch)
	case o.MaxWait < 0 || o.ShutdownTimeout < 0:
		return errors.New("httpapi: MaxWait and ShutdownTimeout must not be negative")
	case o.ReadHeaderTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.IdleTimeout < 0:
		return errors.New("httpapi: ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout must not be negative")
	case o.MaxHeaderBytes < 0:
		return fmt.Errorf("httpapi: MaxHeaderBytes %d must not be negative", o.MaxHeaderBytes)
	case o.MaxConnections < 0:
		return fmt.Errorf("httpapi: MaxConnections %d must not be negative", o.MaxConnections)
	}
	return nil
}

// Server serves the taskq HTTP API. It is safe for concurrent use.
type Server struct {
	opts    Options
	c       *client.Client
	ing     *events.Ingester
	log     *slog.Logger
	keys    *auth.Keyring
	tls     *certReloader
	metrics *metrics
	routes  []route
	handler http.Handler
}

// New validates opts and builds the server. It refuses an empty Token
// unless Insecure is set, with a *NoTokenError naming the flags, and a
// token clients could not send or too short to be a secret with a
// *TokenError (see CheckToken).
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("httpapi: Options.Client is required")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		opts: opts, c: opts.Client, ing: opts.Events, log: opts.Logger,
		metrics: newMetrics(clientlink.Of(opts.Client).Guard.Collector(), clientlink.Of(opts.Client).Metrics,
			newQueueCollector(opts.Client.Inspector(), opts.Logger)),
	}
	if s.keys, err = keyring(opts); err != nil {
		return nil, err
	}
	if opts.TLS != nil {
		if s.tls, err = newCertReloader(*opts.TLS, s.log); err != nil {
			return nil, err
		}
	}
	s.routes = s.routeTable()
	s.handler = s.logRequests(s.recoverPanics(s.mountUI(s.authenticate(http.HandlerFunc(s.dispatch)))))
	if s.keys == nil {
		s.log.Warn("taskq: the HTTP API serves without authentication (insecure development mode)")
	}
	return s, nil
}

// mountUI serves /ui/ with Options.UI, and everything else with next.
func (s *Server) mountUI(next http.Handler) http.Handler {
	ui := s.opts.UI
	if ui == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ui":
			http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, "/ui/"):
			r.Pattern = "/ui/" // the request log's route, unless the UI names a finer one
			ui.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting connections and lets in-flight requests finish (bounded by
// ShutdownTimeout) before it returns. It returns nil after a graceful
// shutdown, or the error that stopped the listener. While serving it also
// counts finished runs for /metrics.
//
// Without a token (Options.Insecure) it serves only on a loopback
// listener: on any other it closes ln and returns an *InsecureAddrError.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.keys == nil && !loopbackListener(ln) {
		_ = ln.Close()
		return &InsecureAddrError{Addr: ln.Addr().String()}
	}
	// Requests outlive ctx until shutdown tells them otherwise.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := s.httpServer(base)
	ln = s.metrics.countOpen(netutil.LimitListener(ln, s.opts.MaxConnections))
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls.config())
	}
	ps := s.subscribeRuns(base)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		s.watchRuns(base, ps)
	}()
	defer func() {
		cancelBase()
		<-watchDone
	}()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.log.Info("taskq HTTP API listening", "addr", ln.Addr().String(), "namespace", clientlink.Of(s.c).Namespace, "tls", s.tls != nil)
	select {
	case err := <-served:
		return fmt.Errorf("httpapi: serve: %w", err)
	case <-ctx.Done():
	}

	s.log.Info("taskq HTTP API shutting down; letting in-flight requests finish", "timeout", s.opts.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	err := srv.Shutdown(sctx)
	cancel()
	if err != nil {
		// Out of time: long-polls answer with the run's current state now.
		cancelBase()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		if err != nil {
			_ = srv.Close()
			err = fmt.Errorf("httpapi: shutdown: requests still running after %s were cut off: %w", s.opts.ShutdownTimeout, err)
		}
	}
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("httpapi: serve: %w", serr))
	}
	s.log.Info("taskq HTTP API stopped")
	return err
}

// httpServer is the net/http server of Serve, with every connection
// deadline and limit of the options.
func (s *Server) httpServer(base context.Context) *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// keyring is the tokens of opts: Options.Tokens, with Options.Token beside
// them as the token named "token" with every scope; nil when neither is
// set (insecure mode).
func keyring(opts Options) (*auth.Keyring, error) {
	if opts.Token == "" {
		return opts.Tokens, nil
	}
	if opts.Tokens != nil {
		return nil, errors.New("httpapi: set Options.Token or Options.Tokens, not both: give the keyring the token (LegacyToken)")
	}
	return auth.NewKeyring("", LegacyToken(TokenName, opts.Token, auth.ScopeAdmin))
}

// TokenName is the name of Options.Token (--token) in logs and metrics;
// ReadOnlyTokenName that of the dashboard's --read-only-token.
const (
	TokenName         = "token"
	ReadOnlyTokenName = "read-only-token"
)

// LegacyToken makes a named token of a plain token value.
func LegacyToken(name, value string, scopes ...auth.Scope) auth.Token {
	return auth.Token{Name: name, Hash: sha256.Sum256([]byte(value)), Scopes: scopes}
}

// Reload reads the tokens file, the webhook sources' file and the TLS
// certificate again (what `taskq serve` does on SIGHUP). Each is swapped
// whole; one that fails to load keeps what was in force, and the errors
// are joined.
func (s *Server) Reload() error {
	var errs []error
	if s.keys != nil {
		if err := s.keys.Reload(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.opts.Webhooks != nil {
		if err := s.opts.Webhooks.Reload(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.tls != nil {
		if err := s.tls.reload(); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		s.log.Error("taskq: reload failed; the previous settings stay in force", "err", err)
	} else {
		s.log.Info("taskq: reloaded tokens, webhook sources and certificate")
	}
	return err
}
