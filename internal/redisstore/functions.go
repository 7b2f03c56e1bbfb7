package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Scripts as Redis functions. A script sent with EVALSHA runs its whole
// source on every call: each of the 20 to 30 functions of its modules is
// created anew, and thrown away for the garbage collector, before the
// script's own code starts (about 12k of a call's 30k instructions of
// overhead, see docs/performance.md). On Redis 7 and later the store sends
// each script as a function of a library of its own instead (FUNCTION LOAD
// once per server, FCALL per call): the library's top level holds the
// modules, created once when it loads, and the function's body is the
// script's own code, with KEYS and ARGV as its parameters. Same source,
// same KEYS and ARGV, same replies; a call costs what it carries.
//
// A library is named after its content (taskq_<script>_<hash>), so stores
// of different versions of taskq on one server each find their own, and
// loading one never disturbs another. A server without a library (a
// restart, a FUNCTION FLUSH, a node new to the cluster) answers "Function
// not found": the store loads it where the call went and sends the call
// again, as go-redis does for EVALSHA and NOSCRIPT. A server without
// functions (Redis before 7.0, miniredis) answers FCALL as an unknown
// command, and the store sends EVALSHA from then on, as it does once an
// ACL refuses it FCALL or FUNCTION LOAD (NOPERM); a library the server
// refuses otherwise (at maxmemory) is sent with EVALSHA for that call.
//
// A script without flags (no shebang line) is one that answers what it can
// without writing when Redis refuses writes: at maxmemory a duplicate
// trigger is still answered, as only a write fails. Redis gives that
// behaviour to such scripts only, and refuses a function that may write
// as a whole at maxmemory (OOM) or on a replica (READONLY), before it
// runs. So a function of such a script that Redis refused that way is sent
// again with EVALSHA, for that call: at maxmemory a call costs one
// refused FCALL more, and answers as before.

// scriptBodyMark separates, in an assembled script, its modules from its
// own code (see assembleScript): the function form puts the first at the
// library's top level and the second in the function's body.
const scriptBodyMark = "-- taskq: the script's own code\n"

// function is a script's function form: the library that defines it and
// the name FCALL calls it by.
type function struct {
	name string
	lib  string
	// unflagged is set for a script without flags, which Redis runs up to
	// its first refused write where it refuses the function as a whole.
	unflagged bool
}

// newFunction returns the function form of src, an assembled script (with
// or without its shebang line), for script name.
func newFunction(name, src string) (*function, error) {
	flags := ""
	if first, rest, ok := strings.Cut(src, "\n"); ok && strings.HasPrefix(first, "#!") {
		for _, f := range strings.Fields(first)[1:] {
			if v, ok := strings.CutPrefix(f, "flags="); ok {
				for _, flag := range strings.Split(v, ",") {
					flags += fmt.Sprintf("'%s', ", flag)
				}
			}
		}
		src = rest
	}
	modules, body, ok := strings.Cut(src, scriptBodyMark)
	if !ok {
		return nil, fmt.Errorf("script %s: no mark of its own code", name)
	}
	sum := sha1.Sum([]byte(flags + "\x00" + src))
	fn := "taskq_" + name + "_" + hex.EncodeToString(sum[:8])
	lib := "#!lua name=" + fn + "\n" + modules +
		"local function taskq_script(KEYS, ARGV)\n" + body + "\nend\n" +
		"redis.register_function{function_name = '" + fn + "', callback = taskq_script, flags = {" +
		strings.TrimSuffix(flags, ", ") + "}}\n"
	return &function{name: fn, lib: lib, unflagged: flags == ""}, nil
}

// functionOf returns the function form of sc the store calls, matching
// variant: nil when the store sends EVALSHA.
func (s *Store) functionOf(sc *script) *function {
	if s.noFunctions.Load() {
		return nil
	}
	if s.sharded && sc.shardedFn != nil {
		return sc.shardedFn
	}
	return sc.fn
}

// isFunctionMissing reports whether err says the server has no function of
// that name: its library was never loaded there, or was lost since.
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

// refusedWhole reports whether err is Redis refusing a call of fn before
// it ran where the script sent with EVALSHA would run (see above).
func (fn *function) refusedWhole(err error) bool {
	if err == nil || !fn.unflagged {
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
	if isNoScript(err) || isFunctionMissing(err) {
		return true
	}
	fn := s.functionOf(sc)
	return fn != nil && fn.refusedWhole(err)
}

// scriptCmd queues on p (a pipeline) the call of sc with keys and args:
// FCALL of its function, or EVALSHA.
func (s *Store) scriptCmd(ctx context.Context, p redis.Pipeliner, sc *script, keys []string, args ...any) *redis.Cmd {
	if fn := s.functionOf(sc); fn != nil {
		return p.FCall(ctx, fn.name, keys, args...)
	}
	return s.variant(sc).EvalSha(ctx, p, keys, args...)
}

// errNotAsFunction says a call could not be made as a function and is to
// be sent with EVALSHA.
var errNotAsFunction = errors.New("redisstore: not called as a function")

// callFunction calls fn on the server that serves keys, loading its library
// there when the server lacks it. It returns errNotAsFunction, having sent
// nothing that ran, when the server has no functions (then no later call
// tries), refused the library, or refused the call as a whole where the
// script would run (refusedWhole).
func (s *Store) callFunction(ctx context.Context, fn *function, keys []string, args ...any) (any, error) {
	v, err := s.rdb.FCall(ctx, fn.name, keys, args...).Result()
	if isFunctionMissing(err) {
		if lerr := s.loadFunction(ctx, fn, keys); lerr != nil {
			if functionsUnsupported(lerr) {
				s.noFunctions.Store(true)
			}
			return nil, errNotAsFunction
		}
		v, err = s.rdb.FCall(ctx, fn.name, keys, args...).Result()
	}
	switch {
	case isFunctionMissing(err):
		// Still missing where the call went (its slot moved to a node
		// the load did not reach): nothing ran; sent as a script.
		return nil, errNotAsFunction
	case functionsUnsupported(err):
		s.noFunctions.Store(true)
		return nil, errNotAsFunction
	case fn.refusedWhole(err):
		return nil, errNotAsFunction
	}
	return v, err
}

// loadFunction loads fn's library on the server that serves keys: the
// master of their slot on a cluster (a replica gets it from its master).
func (s *Store) loadFunction(ctx context.Context, fn *function, keys []string) error {
	node := redis.Cmdable(s.rdb)
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		if len(keys) == 0 {
			return errors.New("redisstore: a script call on a cluster needs a key to find its node")
		}
		m, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return err
		}
		node = m
	}
	return loadFunctionOn(ctx, node, fn)
}

// loadFunctionOn loads fn's library on node. A library of the same name
// is the same code (the name is its hash), so REPLACE changes nothing
// when another store loaded it first.
func loadFunctionOn(ctx context.Context, node redis.Cmdable, fn *function) error {
	return node.FunctionLoadReplace(ctx, fn.lib).Err()
}
