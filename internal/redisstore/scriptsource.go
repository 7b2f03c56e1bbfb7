package redisstore

import (
	"fmt"
	"io/fs"
)

// ScriptSource returns the full source of the named script ("enqueue",
// "start", "finish", ...) as the store loads it, lib.lua included, so its
// SHA1 is the one the store sends with EVALSHA. Benchmarks use it to run the
// same script from a plain Redis client as a baseline.
func ScriptSource(name string) (string, error) {
	if _, err := fs.Stat(luaFS, "lua/"+name+".lua"); err != nil || name == "lib" {
		return "", fmt.Errorf("redisstore: no script named %q", name)
	}
	// What loadScript loads; a test checks the hashes agree.
	src, _, err := scriptSources(name)
	return src, err
}

// EnqueueCall returns the KEYS and ARGV that Enqueue sends to the enqueue
// script for p alone, so a baseline can send precisely the same work. The
// script replies with an array holding p's one reply.
func (s *Store) EnqueueCall(p *EnqueueParams) (keys []string, args []any) {
	keys, args = s.enqueueHeader(1)
	return s.appendEnqueue(keys, args, p)
}
