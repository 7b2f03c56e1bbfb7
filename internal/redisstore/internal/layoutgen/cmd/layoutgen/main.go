// Command layoutgen writes the Lua prelude of internal/redisstore's scripts
// from the layout it declares in Go: see package layoutgen. It runs from
// "go generate" in internal/redisstore.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/taskq/taskq/internal/redisstore/internal/layoutgen"
)

func main() {
	in := flag.String("in", "layout.go", "the Go file declaring the layout")
	out := flag.String("out", "lua/layout_gen.lua", "the Lua prelude to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "layoutgen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	lua, err := layoutgen.Generate(in, src)
	if err != nil {
		return err
	}
	return os.WriteFile(out, lua, 0o644)
}
