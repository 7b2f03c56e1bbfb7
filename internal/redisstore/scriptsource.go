package redisstore

import "fmt"

// ScriptSource returns the full source of the named script ("enqueue",
// "start", "finish", ...) as the store sends it with EVALSHA, layout and
// modules included, so its SHA1 is the one the store sends. Benchmarks use
// it to run the same script from a plain Redis client as a baseline.
func ScriptSource(name string) (string, error) {
	for _, sc := range allScripts {
		if sc.name == name {
			return sc.src, nil
		}
	}
	return "", fmt.Errorf("redisstore: no script named %q", name)
}

// ScriptFunction returns the named script as the store calls it on a
// server with functions (see library.go): the function's name for FCALL
// and the library that defines it, for FUNCTION LOAD. Benchmarks use it to
// send the same call as the store from a plain Redis client.
func ScriptFunction(name string) (function, lib string, err error) {
	for _, sc := range allScripts {
		if sc.name == name {
			return sc.fn, library, nil
		}
	}
	return "", "", fmt.Errorf("redisstore: no script named %q", name)
}
