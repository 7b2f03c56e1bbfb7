package redisstore

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Scripts as Redis functions. A script sent with EVALSHA runs its whole
// source on every call: the layout's constants and each function of its
// modules are created anew, and thrown away for the garbage collector,
// before the script's own code starts. On Redis 7 and later the store
// calls each script as a function of one library instead (FUNCTION LOAD
// once per server, FCALL per call; FCALL_RO for a script flagged
// no-writes): the library's top level holds the layout and the modules,
// created once when it loads, and each function's body is a script's own
// code, with KEYS and ARGV as its parameters. Same source, same KEYS and
// ARGV, same replies; a call costs what it carries.
//
// The library is named after its content (see scripts.go), so stores of
// different versions of taskq on one server each find their own, and
// loading one never disturbs another. A store loads it on every master
// when it first reads its partitions. A server without it (a restart, a
// FUNCTION FLUSH, a failover to a replica that lacks it) answers
// "Function not found": the store loads it where the call went and sends
// the call again, as go-redis does for EVALSHA and NOSCRIPT. A server
// without functions (Redis before 7.0, miniredis) answers FUNCTION LOAD
// or FCALL as an unknown command, and the store sends EVALSHA from then
// on, as it does once an ACL refuses it FCALL or FUNCTION LOAD (NOPERM);
// a library the server refuses otherwise (at maxmemory) is sent with
// EVALSHA for that call.
//
// A script without flags (no shebang line) is one that answers what it can
// without writing when Redis refuses writes: at maxmemory a duplicate
// trigger is still answered, as only a write fails. Redis gives that
// behaviour to such scripts only, and refuses a function that may write
// as a whole at maxmemory (OOM) or on a replica (READONLY), before it
// runs. So a function of such a script that Redis refused that way is sent
// again with EVALSHA, for that call: at maxmemory a call costs one
// refused FCALL more, and answers as before.

// functionOf returns the name of the function the store calls sc by, ""
// when it sends EVALSHA.
func (s *Store) functionOf(sc *script) string {
	switch {
	case s.noFunctions.Load():
		return ""
	case s.sharded && sc.shardedFn != "":
		return sc.shardedFn
	}
	return sc.fn
}

// fcall queues on c (a client or a pipeline) the call of sc's function fn.
func fcall(ctx context.Context, c redis.Cmdable, sc *script, fn string, keys []string, args ...any) *redis.Cmd {
	if slices.Contains(sc.flags, "no-writes") {
		return c.FCallRO(ctx, fn, keys, args...)
	}
	return c.FCall(ctx, fn, keys, args...)
}

// isFunctionMissing reports whether err says the server has no function of
// that name: the library was never loaded there, or was lost since.
func isFunctionMissing(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "ERR Function not found")
}

// functionsUnsupported reports whether err says the server does not know
// FCALL or FUNCTION (Redis before 7.0, miniredis), or does not let the
// store's user call or load functions (NOPERM): then every call would pay
// for trying.
func functionsUnsupported(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.HasPrefix(msg, "noperm") ||
		strings.Contains(msg, "unknown command") && (strings.Contains(msg, "fcall") || strings.Contains(msg, "function"))
}

// refusedWhole reports whether err is Redis refusing a call of sc's
// function before it ran where the script sent with EVALSHA would run (see
// above).
func (sc *script) refusedWhole(err error) bool {
	if err == nil || len(sc.flags) > 0 {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "OOM ") || strings.HasPrefix(msg, "READONLY ")
}

// needsResend reports whether a call of sc in a pipeline did not run for
// want of the script on the server, or was refused as a function where the
// script would run, and is to be sent again on its own (runScript loads
// it, or falls back to EVALSHA). A server without functions makes the
// store send EVALSHA from then on, the call sent again included.
func (s *Store) needsResend(sc *script, err error) bool {
	if functionsUnsupported(err) {
		s.noFunctions.Store(true)
		return true
	}
	return isNoScript(err) || isFunctionMissing(err) || s.functionOf(sc) != "" && sc.refusedWhole(err)
}

// scriptCmd queues on p (a pipeline) the call of sc with keys and args:
// FCALL of its function, or EVALSHA.
func (s *Store) scriptCmd(ctx context.Context, p redis.Pipeliner, sc *script, keys []string, args ...any) *redis.Cmd {
	if fn := s.functionOf(sc); fn != "" {
		return fcall(ctx, p, sc, fn, keys, args...)
	}
	return s.variant(sc).EvalSha(ctx, p, keys, args...)
}

// errNotAsFunction says a call could not be made as a function and is to
// be sent with EVALSHA.
var errNotAsFunction = errors.New("redisstore: not called as a function")

// callFunction calls sc's function fn on the server that serves keys,
// loading the library there when the server lacks it. It returns
// errNotAsFunction, having sent nothing that ran, when the server has no
// functions (then no later call tries), refused the library, or refused
// the call as a whole where the script would run (refusedWhole).
func (s *Store) callFunction(ctx context.Context, sc *script, fn string, keys []string, args ...any) (any, error) {
	v, err := fcall(ctx, s.rdb, sc, fn, keys, args...).Result()
	if isFunctionMissing(err) {
		if lerr := s.loadLibraryFor(ctx, keys); lerr != nil {
			s.noteFunctionsErr(lerr)
			return nil, errNotAsFunction
		}
		v, err = fcall(ctx, s.rdb, sc, fn, keys, args...).Result()
	}
	switch {
	case isFunctionMissing(err):
		// Still missing where the call went (its slot moved to a node
		// the load did not reach): nothing ran; sent as a script.
		return nil, errNotAsFunction
	case functionsUnsupported(err):
		s.noFunctions.Store(true)
		return nil, errNotAsFunction
	case sc.refusedWhole(err):
		return nil, errNotAsFunction
	}
	return v, err
}

// noteFunctionsErr makes the store send EVALSHA from now on when err, of
// loading the library, says the server has no functions for it.
func (s *Store) noteFunctionsErr(err error) {
	if functionsUnsupported(err) {
		s.noFunctions.Store(true)
	}
}

// loadLibraryFor loads the library on the server that serves keys: the
// master of their slot on a cluster (a replica gets it from its master).
func (s *Store) loadLibraryFor(ctx context.Context, keys []string) error {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return loadLibraryOn(ctx, s.rdb)
	}
	if len(keys) == 0 {
		return errors.New("redisstore: a script call on a cluster needs a key to find its node")
	}
	m, err := cc.MasterForKey(ctx, keys[0])
	if err != nil {
		return err
	}
	return loadLibraryOn(ctx, m)
}

// loadLibrary loads the library on every master, so that the first calls
// find it; a master that lacks it later is met by loading it then. A
// server without functions makes the store send EVALSHA from the start.
func (s *Store) loadLibrary(ctx context.Context) {
	var err error
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return loadLibraryOn(ctx, m) })
	} else {
		err = loadLibraryOn(ctx, s.rdb)
	}
	s.noteFunctionsErr(err)
}

// loadLibraryOn loads the library on node. A library of the same name is
// the same code (the name is its hash), so one there already is kept:
// Redis answers that before it compiles anything.
func loadLibraryOn(ctx context.Context, node redis.Cmdable) error {
	err := node.FunctionLoad(ctx, library).Err()
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}
