package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every exit code declared in exit.go is in exitCodes, so taskq --help lists
// it, and in docs/cli.md's table; neither lists a code that is not declared.
func TestExitCodesListed(t *testing.T) {
	t.Parallel()
	declared := declaredExitCodes(t)
	if len(declared) == 0 {
		t.Fatal("no exit* constants found in exit.go")
	}
	listed := map[int]bool{}
	for _, e := range exitCodes {
		if listed[e.code] {
			t.Errorf("exitCodes lists %d twice", e.code)
		}
		listed[e.code] = true
	}
	for name, code := range declared {
		if !listed[code] {
			t.Errorf("%s = %d is not in exitCodes (taskq --help)", name, code)
		}
	}
	if len(listed) != len(declared) {
		t.Errorf("exitCodes has %d codes, exit.go declares %d", len(listed), len(declared))
	}

	r := runWith(context.Background(), invocation{}, "--help")
	help := strings.Join(strings.Fields(r.stdout), " ")
	for _, e := range exitCodes {
		if want := strconv.Itoa(e.code) + " " + e.meaning; !strings.Contains(help, want) {
			t.Errorf("taskq --help lacks exit code %q:\n%s", want, r.stdout)
		}
	}

	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## Exit codes\n")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| (\d+) \|`)
	documented := map[int]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		n, _ := strconv.Atoi(m[1])
		documented[n] = true
	}
	for code := range listed {
		if !documented[code] {
			t.Errorf("docs/cli.md's exit code table lacks %d", code)
		}
	}
	for code := range documented {
		if !listed[code] {
			t.Errorf("docs/cli.md lists exit code %d, which the CLI does not use", code)
		}
	}
}

// declaredExitCodes reads the exit* integer constants of exit.go.
func declaredExitCodes(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "exit.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "exit") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("exit.go: %s is not a literal", n.Name)
				}
				v, _ := strconv.Atoi(lit.Value)
				out[n.Name] = v
			}
		}
	}
	return out
}
