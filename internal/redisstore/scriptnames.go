package redisstore

// ScriptNames maps the SHA1 of every script the store runs to the script's
// name ("enqueue", "start", "finish", ...). Tools that observe the commands
// a Store sends, such as the history recorder of the fault tests, use it to
// tell the scripts apart. A script with a shebang line is there twice: as
// ScriptSource gives it, and without its first line, as the store sends it
// to a server that cannot compile a shebang; a script that publishes
// notices is there once more, in the sharded form a store on a cluster
// sends. The function names FCALL calls them by (see library.go) map to
// the script's name as well.
// Each call returns a fresh map.
func ScriptNames() map[string]string {
	m := make(map[string]string, 5*len(allScripts))
	for _, sc := range allScripts {
		m[sc.Hash()] = sc.name
		if sc.plain != nil {
			m[sc.plain.Hash()] = sc.name
		}
		if sc.sharded != nil {
			m[sc.sharded.Hash()] = sc.name
		}
		// FCALL names the function, not a hash (see library.go).
		m[sc.fn] = sc.name
		if sc.shardedFn != "" {
			m[sc.shardedFn] = sc.name
		}
	}
	return m
}
