package redisstore

import "fmt"

// ScriptSource returns the full source of the named script ("enqueue",
// "start", "finish", ...) as the store loads it, layout and modules
// included, so its SHA1 is the one the store sends with EVALSHA.
// Benchmarks use it to run the same script from a plain Redis client as a
// baseline.
func ScriptSource(name string) (string, error) {
	for _, sc := range allScripts {
		if sc.name == name {
			return sc.src, nil
		}
	}
	return "", fmt.Errorf("redisstore: no script named %q", name)
}

// ScriptFormSources returns the full sources of the second forms of the
// named script (see loadScriptForm: the scheduled form of "enqueue"), each
// as the store loads it; none for most scripts. ScriptNames gives their
// SHA1s the name of the script they are a form of.
func ScriptFormSources(name string) []string {
	var out []string
	for _, sc := range scriptForms {
		if sc.name == name {
			out = append(out, sc.src)
		}
	}
	return out
}

// ScriptFunction returns the named script as the store calls it on a
// server with functions (see functions.go): the function's name for FCALL
// and the library that defines it, for FUNCTION LOAD. Benchmarks use it to
// send the same call as the store from a plain Redis client.
func ScriptFunction(name string) (function, library string, err error) {
	for _, sc := range allScripts {
		if sc.name == name {
			return sc.fn.name, sc.fn.lib, nil
		}
	}
	return "", "", fmt.Errorf("redisstore: no script named %q", name)
}
