package docstest

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const (
	// modulePath is the repository's module.
	modulePath = "github.com/taskq/taskq"
	// appPrefix is how a page imports its own packages.
	appPrefix = "example.com/app/"
	// blockMarker is the line of a wrapper that the fragment replaces.
	blockMarker = "// block"
)

// stubbed are the modules a page may import without taskq depending on
// them: testdata/stubs holds a stand-in for each.
var stubbed = []string{"go.opentelemetry.io/otel"}

// block is one ```go block of a page.
type block struct {
	page    string // the page's path from the repository root
	line    int    // the line of its first line of code
	code    []string
	wrapper []string // the go:wrap comment's lines, nil for a whole file
	wrapAt  int      // the line of the wrapper's first line
}

// goFile is one file to compile, with //line directives pointing at the page.
type goFile struct {
	page, pkg, name string
	text            string
}

// TestDocsCompile builds every Go block in README.md and docs/*.md, and
// runs the tests in testdata against them (the README's example on
// miniredis).
func TestDocsCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)

	var blocks []block
	var problems []string
	for _, p := range pages {
		rel, _ := filepath.Rel(root, p)
		bs, errs := readBlocks(t, p, rel)
		blocks = append(blocks, bs...)
		problems = append(problems, errs...)
	}
	if len(blocks) == 0 {
		t.Fatal("no go blocks found")
	}

	var files []goFile
	for _, b := range blocks {
		f, err := b.file(root)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		files = append(files, f)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.FailNow()
	}

	dir, err := os.MkdirTemp(".", "_build")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	buildImport := modulePath + "/internal/docstest/" + filepath.Base(dir)

	pkgs := map[string]bool{}  // directories under dir holding page code
	tests := map[string]bool{} // of those, the ones with tests
	write := func(rel, text string) {
		full := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(rewriteImports(text, buildImport, path.Dir(path.Dir(rel)))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		// A package NAME_test is the external test package of NAME.
		rel := path.Join(pageDir(f.page), strings.TrimSuffix(f.pkg, "_test"), f.name)
		write(rel, f.text)
		pkgs[path.Dir(rel)] = true
		if strings.HasSuffix(f.name, "_test.go") {
			tests[path.Dir(rel)] = true
		}
	}
	// Stand-ins and tests from testdata.
	err = filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, "testdata"+string(filepath.Separator)))
		write(rel, string(text))
		if strings.HasSuffix(p, "_test.go") {
			tests[path.Dir(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// One go vet for every page: it type-checks as the compiler does and
	// runs vet's checks.
	var list []string
	for p := range pkgs {
		list = append(list, "./"+path.Join("internal/docstest", filepath.ToSlash(dir), p))
	}
	sort.Strings(list)
	if out, err := goCmd(root, dir, append([]string{"vet"}, list...)...); err != nil {
		t.Fatalf("the Go in the documentation does not compile:\n%s", out)
	}

	list = list[:0]
	for p := range tests {
		if !pkgs[p] {
			t.Errorf("testdata/%s has tests but no page has a package there", p)
		}
		list = append(list, "./"+path.Join("internal/docstest", filepath.ToSlash(dir), p))
	}
	sort.Strings(list)
	if len(list) > 0 {
		out, err := goCmd(root, dir, append([]string{"test", "-count=1", "-v"}, list...)...)
		if err != nil {
			t.Fatalf("the documentation's examples fail:\n%s", out)
		}
		t.Logf("%s", out)
	}
}

// goCmd runs the go command at the repository root, reporting paths from
// there.
func goCmd(root, dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := strings.ReplaceAll(out.String(), root+string(filepath.Separator), "")
	text = strings.ReplaceAll(text, modulePath+"/internal/docstest/"+filepath.Base(dir)+"/", "")
	return text, err
}

// pageDir is the directory of a page's packages: "readme" for README.md,
// "concurrency" for docs/concurrency.md.
func pageDir(page string) string {
	return strings.ToLower(strings.TrimSuffix(path.Base(filepath.ToSlash(page)), ".md"))
}

var importPath = regexp.MustCompile(`"(` + regexp.QuoteMeta(appPrefix) + `|` + stubPattern() + `)([^"]*)"`)

func stubPattern() string {
	q := make([]string, len(stubbed))
	for i, s := range stubbed {
		q[i] = regexp.QuoteMeta(s)
	}
	return strings.Join(q, "|")
}

// rewriteImports points a page's own import paths at its packages in the
// build directory, and stubbed modules at their stand-ins. It changes no
// line count.
func rewriteImports(text, buildImport, page string) string {
	return importPath.ReplaceAllStringFunc(text, func(s string) string {
		m := importPath.FindStringSubmatch(s)
		if m[1] == appPrefix {
			return `"` + buildImport + "/" + page + "/" + m[2] + `"`
		}
		return `"` + buildImport + "/stubs/" + m[1] + m[2] + `"`
	})
}

var (
	// A fence may be indented, inside a list item.
	fence     = regexp.MustCompile("^( *)```")
	pkgClause = regexp.MustCompile(`^package ([A-Za-z_][A-Za-z0-9_]*)\s*(//.*)?$`)
)

// readBlocks finds the ```go blocks of a page and the go:wrap comment before
// each fragment.
func readBlocks(t *testing.T, full, rel string) ([]block, []string) {
	t.Helper()
	f, err := os.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	var blocks []block
	var problems []string
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent := m[1]
		lang := strings.TrimSpace(strings.TrimPrefix(lines[i], m[0]))
		start := i
		for i++; i < len(lines) && !fence.MatchString(lines[i]); i++ {
		}
		if i == len(lines) {
			problems = append(problems, fmt.Sprintf("%s:%d: code block never closed", rel, start+1))
			break
		}
		if lang != "go" {
			continue
		}
		code := make([]string, 0, i-start-1)
		for _, l := range lines[start+1 : i] {
			code = append(code, strings.TrimPrefix(l, indent))
		}
		b := block{page: rel, line: start + 2, code: code}
		b.wrapper, b.wrapAt = wrapperBefore(lines, start)
		blocks = append(blocks, b)
	}
	return blocks, problems
}

// wrapperBefore returns the lines inside a <!-- go:wrap ... --> comment that
// ends just before line i (blank lines between allowed), and the 1-based
// line of the first of them.
func wrapperBefore(lines []string, i int) ([]string, int) {
	j := i - 1
	for j >= 0 && strings.TrimSpace(lines[j]) == "" {
		j--
	}
	if j < 0 || strings.TrimSpace(lines[j]) != "-->" {
		return nil, 0
	}
	end := j
	for j--; j >= 0; j-- {
		if strings.HasPrefix(strings.TrimSpace(lines[j]), "<!--") {
			break
		}
	}
	if j < 0 || strings.TrimSpace(lines[j]) != "<!-- go:wrap" {
		return nil, 0
	}
	return lines[j+1 : end], j + 2
}

// file makes the Go file a block is compiled as.
func (b block) file(root string) (goFile, error) {
	at := func(line int) string { return fmt.Sprintf("//line %s:%d", filepath.Join(root, b.page), line) }
	name := fmt.Sprintf("%s_%d.go", pageDir(b.page), b.line)
	if pkg := packageOf(b.code); strings.HasSuffix(pkg, "_test") || strings.HasSuffix(packageOf(b.wrapper), "_test") {
		name = strings.TrimSuffix(name, ".go") + "_test.go"
	}
	if pkg := packageOf(b.code); pkg != "" {
		if b.wrapper != nil {
			return goFile{}, fmt.Errorf("%s:%d: a whole file (package %s) with a go:wrap comment before it", b.page, b.line, pkg)
		}
		return goFile{page: b.page, pkg: pkg, name: name, text: at(b.line) + "\n" + strings.Join(b.code, "\n") + "\n"}, nil
	}
	if b.wrapper == nil {
		return goFile{}, fmt.Errorf("%s:%d: a go block that is neither a whole file (a package clause) nor a fragment with a <!-- go:wrap ... --> comment before it (see internal/docstest)", b.page, b.line)
	}
	pkg := packageOf(b.wrapper)
	if pkg == "" {
		return goFile{}, fmt.Errorf("%s:%d: the go:wrap comment has no package clause", b.page, b.wrapAt)
	}
	marker := -1
	for i, l := range b.wrapper {
		if strings.TrimSpace(l) == blockMarker {
			if marker >= 0 {
				return goFile{}, fmt.Errorf("%s:%d: the go:wrap comment has %q twice", b.page, b.wrapAt+i, blockMarker)
			}
			marker = i
		}
	}
	if marker < 0 {
		return goFile{}, fmt.Errorf("%s:%d: the go:wrap comment has no line %q where the block goes", b.page, b.wrapAt, blockMarker)
	}
	var s strings.Builder
	s.WriteString(at(b.wrapAt) + "\n")
	for _, l := range b.wrapper[:marker] {
		s.WriteString(l + "\n")
	}
	s.WriteString(at(b.line) + "\n")
	for _, l := range b.code {
		s.WriteString(l + "\n")
	}
	s.WriteString(at(b.wrapAt+marker+1) + "\n")
	for _, l := range b.wrapper[marker+1:] {
		s.WriteString(l + "\n")
	}
	return goFile{page: b.page, pkg: pkg, name: name, text: s.String()}, nil
}

// packageOf is the package a file's first line that is not blank or a //
// comment declares, or "".
func packageOf(lines []string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		if m := pkgClause.FindStringSubmatch(l); m != nil {
			return m[1]
		}
		return ""
	}
	return ""
}
