package redisstore

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ConnectOptions say how a client or a worker reaches Redis.
type ConnectOptions struct {
	// Redis is a client the caller made; it is used as it is, timeouts
	// included, and the caller closes it.
	Redis redis.UniversalClient
	// URL (see Schemes) is dialled when Redis is nil.
	URL string
	// OperationTimeout bounds every call on a client dialled from URL:
	// see ClientOptions.
	OperationTimeout time.Duration
}

// Connect returns the Redis client a taskq client or worker works with:
// o.Redis, or else a new client for o.URL: a *redis.ClusterClient for a
// cluster URL (see IsClusterURL), a *redis.Client otherwise, made with
// ClusterOptions or ClientOptions. owned says whether the caller made it
// here and so must close it. A cluster client, given or made, gets the
// hook that follows failovers (FollowFailovers). It is the one place the
// constructors set Redis up.
func Connect(o ConnectOptions) (rdb redis.UniversalClient, owned bool, err error) {
	if o.Redis != nil {
		FollowFailovers(o.Redis)
		return o.Redis, false, nil
	}
	if IsClusterURL(o.URL) {
		co, err := ClusterOptions(o.URL, o.OperationTimeout)
		if err != nil {
			return nil, false, err
		}
		cc := redis.NewClusterClient(co)
		FollowFailovers(cc)
		return cc, true, nil
	}
	ro, err := ClientOptions(o.URL, o.OperationTimeout)
	if err != nil {
		return nil, false, err
	}
	return redis.NewClient(ro), true, nil
}

// plainSchemes are the schemes of a URL of one server, as go-redis
// parses them.
var plainSchemes = []string{"redis", "rediss", "unix"}

// Schemes lists every scheme a Redis URL may have, for messages and help.
const Schemes = "redis://, rediss:// (TLS), unix:// (a socket), or redis+cluster:// and rediss+cluster:// for a Redis Cluster"

// SchemeError says a Redis URL has a scheme taskq does not dial.
type SchemeError struct {
	// Scheme is the URL's, "" when it has none.
	Scheme string
}

func (e *SchemeError) Error() string {
	if e.Scheme == "" {
		return "redis URL has no scheme: use " + Schemes
	}
	return fmt.Sprintf("redis URL scheme %q is not one taskq dials: use %s", e.Scheme, Schemes)
}

// The schemes of a cluster URL: redis+cluster://, and rediss+cluster://
// for TLS.
const (
	ClusterScheme    = "redis+cluster"
	ClusterTLSScheme = "rediss+cluster"
)

// IsClusterURL reports whether rawURL names a Redis Cluster: its scheme is
// redis+cluster or rediss+cluster, and its host part one or more seed
// addresses separated by commas:
//
//	redis+cluster://user:password@10.0.0.1:7000,10.0.0.2:7000/?dial_timeout=2s
//
// The seeds need not be all the masters: the client reads the cluster's
// map from the first that answers. User, password and the query's options
// (go-redis's, as on one node) apply to every node.
func IsClusterURL(rawURL string) bool {
	scheme, _, ok := strings.Cut(rawURL, "://")
	return ok && (strings.EqualFold(scheme, ClusterScheme) || strings.EqualFold(scheme, ClusterTLSScheme))
}

// ClusterOptions parses a cluster URL (see IsClusterURL) into go-redis
// cluster options, with the same timeouts as ClientOptions gives one node.
// A cluster has no databases: a path other than "" or "/" or "/0" is
// refused. Errors do not repeat the URL, which may hold a password.
func ClusterOptions(rawURL string, opTimeout time.Duration) (*redis.ClusterOptions, error) {
	if !IsClusterURL(rawURL) {
		return nil, errors.New("redis cluster URL: the scheme must be " + ClusterScheme + ":// or " + ClusterTLSScheme + "://")
	}
	scheme, rest, _ := strings.Cut(rawURL, "://")
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	seeds := strings.Split(hosts, ",")
	for i, h := range seeds {
		if h == "" {
			return nil, fmt.Errorf("redis cluster URL: seed address %d of %d is empty", i+1, len(seeds))
		}
	}
	path, query := tail, ""
	if i := strings.IndexByte(tail, '?'); i >= 0 {
		path, query = tail[:i], tail[i+1:]
	}
	if path != "" && path != "/" && path != "/0" {
		return nil, errors.New("redis cluster URL: a cluster has only database 0, so the URL's path must be empty")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("redis cluster URL: query: %w", err)
	}
	if q.Has("addr") {
		return nil, errors.New("redis cluster URL: give the seed addresses in the host part, separated by commas, not as addr=")
	}
	for _, h := range seeds[1:] {
		q.Add("addr", h)
	}
	plain := "redis"
	if strings.EqualFold(scheme, ClusterTLSScheme) {
		plain = "rediss"
	}
	u := plain + "://" + userinfo + seeds[0]
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	co, err := redis.ParseClusterURL(u)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("redis cluster URL: %w", err)
	}
	co.ContextTimeoutEnabled = true
	capTimeouts(opTimeout, &co.DialTimeout, &co.ReadTimeout, &co.WriteTimeout)
	if co.PoolSize == 0 {
		co.PoolSize = 5*runtime.GOMAXPROCS(0) + PoolHeadroom // go-redis's default for a cluster node, and room
	}
	return co, nil
}

// ClientOptions parses a Redis URL into go-redis options under which no
// call outlives its context's deadline, nor opTimeout when it has none:
//   - ContextTimeoutEnabled, so that go-redis sets each socket deadline
//     from the call's context. Without it a read or write waits its own
//     ReadTimeout or WriteTimeout whatever the deadline, and a call that
//     waited its turn for a connection, or had a round trip behind it,
//     took up to twice its deadline when Redis stopped answering.
//   - DialTimeout, ReadTimeout and WriteTimeout capped at opTimeout: go-redis
//     dials and greets a new connection in the background by these alone,
//     and calls without a deadline (Pub/Sub, a shutdown's last writes) use
//     them too. A timeout the URL sets lower is kept.
//
// A URL that does not parse gives an error that does not repeat the URL,
// which may hold a password.
func ClientOptions(rawURL string, opTimeout time.Duration) (*redis.Options, error) {
	if scheme, _, ok := strings.Cut(rawURL, "://"); !ok || !slices.Contains(plainSchemes, strings.ToLower(scheme)) {
		if !ok {
			scheme = ""
		}
		return nil, &SchemeError{Scheme: scheme}
	}
	ro, err := redis.ParseURL(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	ro.ContextTimeoutEnabled = true
	capTimeouts(opTimeout, &ro.DialTimeout, &ro.ReadTimeout, &ro.WriteTimeout)
	if ro.PoolSize == 0 {
		ro.PoolSize = 10*runtime.GOMAXPROCS(0) + PoolHeadroom // go-redis's default, and room
	}
	return ro, nil
}

// PoolHeadroom is what a client made from a URL that sets no pool_size
// adds to go-redis's default pool (10 connections per core on one node, 5
// per core per node on a cluster). A worker holds one connection per
// partition for its blocking read, on the partition's node, for up to
// FetchBlock: at 16 partitions on a node (a namespace configured with
// them) those alone could take the node's whole default pool on a small
// machine, and the worker's heartbeats and outcomes then waited for a
// connection until their leases lapsed and other workers took their runs.
// A pool opens connections only when they are needed, so the headroom
// costs nothing when idle.
const PoolHeadroom = 16

// capTimeouts lowers each of ds to opTimeout, when opTimeout is set and d
// is unset or higher.
func capTimeouts(opTimeout time.Duration, ds ...*time.Duration) {
	if opTimeout <= 0 {
		return
	}
	for _, d := range ds {
		if *d == 0 || *d > opTimeout {
			*d = opTimeout
		}
	}
}
