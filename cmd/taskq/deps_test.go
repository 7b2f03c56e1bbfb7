package main

import (
	"go/build"
	"strings"
	"testing"
)

// The CLI does not depend on the examples: users copy and change those,
// and `taskq dev` runs its own copy of their tasks (internal/devtasks).
func TestCLIDoesNotImportExamples(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		if strings.HasPrefix(path, "github.com/taskq/taskq/examples/") {
			t.Errorf("cmd/taskq imports %s", path)
		}
	}
}
