package httpapi

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
)

// documentedRoutes reads "METHOD /path" pairs from the paths section of an
// OpenAPI document written in block-style YAML: paths are the keys indented
// by two spaces under "paths:", their operations the HTTP methods indented
// by four.
func documentedRoutes(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pathLine := regexp.MustCompile(`^  (/[^:\s]*):\s*$`)
	opLine := regexp.MustCompile(`^    (get|put|post|delete|patch|head|options):`)
	var out []string
	in, path := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if !strings.HasPrefix(line, " ") {
			in = strings.HasPrefix(line, "paths:")
			continue
		}
		if !in {
			continue
		}
		if m := pathLine.FindStringSubmatch(line); m != nil {
			path = m[1]
		} else if m := opLine.FindStringSubmatch(line); m != nil && path != "" {
			out = append(out, strings.ToUpper(m[1])+" "+path)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// The OpenAPI document lists exactly the routes the handler serves, and
// the handler serves each of them.
func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	doc := documentedRoutes(t, filepath.Join("..", "..", "api", "openapi.yaml"))
	var served []string
	for _, rt := range e.s.routes {
		// ServeMux's {key...} is OpenAPI's {key}.
		served = append(served, rt.method+" "+strings.ReplaceAll(rt.pattern, "...}", "}"))
	}
	sort.Strings(served)
	if strings.Join(doc, "\n") != strings.Join(served, "\n") {
		t.Fatalf("api/openapi.yaml and the handler disagree:\ndocumented:\n  %s\nserved:\n  %s",
			strings.Join(doc, "\n  "), strings.Join(served, "\n  "))
	}
	for _, rt := range e.s.routes {
		r := e.call(rt.method, samplePath(rt.pattern), `{"input": {}}`)
		if r.status == http.StatusNotFound && r.str("error") == CodeNotFound || r.status == http.StatusMethodNotAllowed {
			t.Errorf("%s %s is documented but not served: %d %s", rt.method, rt.pattern, r.status, r.raw)
		}
	}
	if len(doc) < 11 {
		t.Fatalf("read only %d routes from the document", len(doc))
	}
}
