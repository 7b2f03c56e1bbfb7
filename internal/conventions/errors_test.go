package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Error strings made in pkg/ and internal/ follow CONTRIBUTING.md: an
// error a package makes on the spot starts with the package's name
// ("worker: step ..."), never with "taskq: ", which names no package and
// is what log messages start with.
func TestErrorStringsNameTheirPackage(t *testing.T) {
	for _, root := range []string{"../../pkg", "../../internal"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name+"."+sel.Sel.Name != "errors.New" && x.Name+"."+sel.Sel.Name != "fmt.Errorf" {
					return true
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(lit.Value)
				if strings.HasPrefix(s, "taskq: ") {
					t.Errorf("%s: error %q starts with \"taskq: \"; start it with %q", fset.Position(lit.Pos()), s, f.Name.Name+": ")
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
