package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// keyFigure is one line of BenchmarkKey output.
type keyFigure struct {
	ns     float64
	allocs int64
	bytes  int64
}

// benchKeys reports the key-derivation benchmarks of pkg/idempotency:
// taskq's Expression.Key beside a plain cel-go Program.Eval of the same
// expression on the same input, from a file of their output (as make bench
// writes it) or by running them.
func benchKeys(ctx context.Context, e *env, rep *report) error {
	src := e.cfg.keyBench
	if src == "off" {
		return nil
	}
	var out []byte
	var err error
	if src != "" {
		e.printf("\n== keys: key derivation, from %s\n", src)
		out, err = os.ReadFile(src)
	} else {
		e.printf("\n== keys: key derivation (go test -bench BenchmarkKey ./pkg/idempotency)\n")
		out, err = runKeyBench(ctx, e)
	}
	if err != nil {
		return err
	}
	figs := parseKeyBench(out)
	if len(figs) == 0 {
		return fmt.Errorf("no BenchmarkKey results in the output:\n%s", out)
	}
	for _, c := range []string{"field", "concat", "checksum"} {
		tq, ok := figs[c+"/taskq"]
		if !ok {
			continue
		}
		cg, cgn := figs[c+"/celgo"], figs[c+"/celgo-nolimit"]
		x := row{scenario: "keys", variant: c + " taskq",
			figure: fmt.Sprintf("%.0f ns/op, %d allocs, %d B", tq.ns, tq.allocs, tq.bytes),
			ratio:  ratio(tq.ns, cg.ns) + " of cel-go"}
		if c == "field" {
			x.target, x.verdict = "<=300ns, <=2 allocs", verdict(tq.ns <= 300 && tq.allocs <= 2)
		} else {
			x.target, x.verdict = "<=1.2x cel-go", verdict(tq.ns <= 1.2*cg.ns)
		}
		rep.add(x)
		rep.add(row{scenario: "keys", variant: c + " cel-go",
			figure: fmt.Sprintf("%.0f ns/op, %d allocs (no cost limit: %.0f ns/op, %d allocs)", cg.ns, cg.allocs, cgn.ns, cgn.allocs),
			ratio:  "1.00x"})
		e.printf("keys %s: taskq %.0f ns/op %d allocs, cel-go %.0f ns/op %d allocs (%s)\n", c, tq.ns, tq.allocs, cg.ns, cg.allocs, ratio(tq.ns, cg.ns))
	}
	return nil
}

func runKeyBench(ctx context.Context, e *env) ([]byte, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, fmt.Errorf("%w (pass -key-bench FILE or -key-bench off)", err)
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkKey", "-benchmem", "./pkg/idempotency/")
	cmd.Dir = root
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench: %w\n%s", err, buf.Bytes())
	}
	e.printf("%s", indent(buf.String()))
	return buf.Bytes(), nil
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("    " + l)
		}
	}
	return b.String()
}

// moduleRoot finds the taskq module from the working directory upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/taskq/taskq\n")) {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("the taskq module is not in %s or above", dir)
		}
		dir = up
	}
}

// parseKeyBench reads lines like
//
//	BenchmarkKey/field/taskq-2   45690087   27.13 ns/op   0 B/op   0 allocs/op
//
// into figures keyed by "field/taskq".
func parseKeyBench(out []byte) map[string]keyFigure {
	figs := map[string]keyFigure{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkKey/") {
			continue
		}
		name := strings.TrimPrefix(f[0], "BenchmarkKey/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		var k keyFigure
		for i := 2; i+1 < len(f); i += 2 {
			switch f[i+1] {
			case "ns/op":
				k.ns, _ = strconv.ParseFloat(f[i], 64)
			case "B/op":
				k.bytes, _ = strconv.ParseInt(f[i], 10, 64)
			case "allocs/op":
				k.allocs, _ = strconv.ParseInt(f[i], 10, 64)
			}
		}
		figs[name] = k
	}
	return figs
}
