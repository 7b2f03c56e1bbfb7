package idempotency

import (
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	boundsCompilerOnce sync.Once
	boundsCompiler     *Compiler
)

// fuzzInputBytes bounds the scaled input, as client.Options.MaxInputBytes
// does by default.
const fuzzInputBytes = 1 << 20

// FuzzEvaluationBounds evaluates arbitrary expressions on arbitrary input,
// each string and list of which is repeated scale times (up to 1 MiB of
// input in all), under the default limits, and checks that the evaluation
// is bounded: it ends within a time no unbounded case keeps to, allocates
// no more than a small multiple of its input plus what the cost limit
// allows, and fails only with a typed error. The seeds are the reported
// cases and others like them; `go test` runs them, `make fuzz` searches
// further.
func FuzzEvaluationBounds(f *testing.F) {
	seeds := []struct {
		expr, input string
		scale       uint16
	}{
		{`input.a.replace(input.b, input.c)`, `{"a":"a","b":"","c":"c"}`, 65535},
		{`input.a.replace(input.b, input.c)`, `{"a":"a","b":"","c":"c"}`, 30000},
		{`input.a.replace("a", input.c, 100000)`, `{"a":"a","c":"c"}`, 65535},
		{`string(input.a.indexOf(input.b))`, `{"a":"aa","b":"a"}`, 65535},
		{`string(input.a.lastIndexOf(input.b))`, `{"a":"aa","b":"a"}`, 65535},
		{`[input.a].map(a, [a+a].map(b, [b+b].map(c, [c+c].map(d, [d+d].map(e, e+e)))))[0][0][0][0][0]`, `{"a":"a"}`, 50000},
		{`string(size([input.l].map(a, [a+a].map(b, [b+b].map(c, c + c)))[0][0][0]))`, `{"l":[null]}`, 65535},
		{`input.l.join(input.s)`, `{"l":[""],"s":"s"}`, 10000},
		{`string(size(input.s.split("")))`, `{"s":"é"}`, 65535},
		{`string(size(input.s.split(",")))`, `{"s":","}`, 65535},
		{`"%s%s%s%s".format([input.l, input.l, input.l, input.l])`, `{"l":[5e-324]}`, 65535},
		{`"%.100f%x".format([input.n, input.s])`, `{"n":1e308,"s":"s"}`, 65535},
		{`strings.quote(input.s)`, `{"s":"\n"}`, 65535},
		{`input.s.matches(input.p) ? "y" : "n"`, `{"s":"x","p":"(xxxxxxxxxy){1000}"}`, 10000},
		{`input.s.matches("(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx){1000}") ? "y" : "n"`, `{"s":"x"}`, 1000},
		{`input.l.exists(x, size(input.s) == 1) ? "y" : "n"`, `{"l":[null],"s":"é"}`, 65535},
		{`input.l.exists(x, input.s == input.t) ? "y" : "n"`, `{"l":[null],"s":"a","t":"a"}`, 65535},
		{`input.l.exists(x, input.m == input.m) ? "y" : "n"`, `{"l":[null],"m":[[null]]}`, 65535},
		{`input.l.exists(x, int(input.s) == 1) ? "y" : "n"`, `{"l":[null],"s":"9"}`, 65535},
		{`input.l.exists(x, "%s".format([input.l]) == "") ? "y" : "n"`, `{"l":[null]}`, 65535},
		{`input.l.exists(x, input.s.lowerAscii() == "") ? "y" : "n"`, `{"l":[null],"s":"A"}`, 65535},
		{`input.l.map(x, input.l.map(y, input.l.map(z, x)))[0][0][0]`, `{"l":[null]}`, 100},
		{`checksum(input.s + input.s)`, `{"s":"x"}`, 65535},
		{`input.s.substring(1).reverse().upperAscii().trim()`, `{"s":"\u00e9x"}`, 65535},
		{`string(input.l + input.l)`, `{"l":[1]}`, 65535},
		{`input.id`, `{"id":"abc"}`, 1},
		{`"order:" + input.id + ":" + additional_metadata.tenant`, `{"id":"x"}`, 1},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.input, s.scale)
	}
	boundsCompilerOnce.Do(func() {
		c, err := NewCompiler(Options{})
		if err != nil {
			f.Fatal(err)
		}
		boundsCompiler = c
	})
	f.Fuzz(func(t *testing.T, expr, inputJSON string, scale uint16) {
		c := boundsCompiler
		e, err := c.Compile(expr)
		if err != nil {
			return
		}
		input, err := decodeObject(varInput, []byte(inputJSON), c.opts.MaxInputDepth)
		if err != nil || input == nil {
			return
		}
		factor := 1
		if len(inputJSON) > 0 {
			factor = max(1, min(int(scale), fuzzInputBytes/len(inputJSON)))
		}
		input = scaled(input, factor).(map[string]any)
		inputBytes := jsonSize(t, input)
		meta := map[string]any{"tenant": "acme"}

		allocated, elapsed, key, err := measure(func() (string, error) { return e.keyMap(input, meta) })
		checkKeyResult(t, e, key, err)
		// Unbounded, the seeds take from seconds to minutes, or gigabytes;
		// bounded, milliseconds. What an evaluation may allocate besides a
		// few copies of its input is set by the cost limit: at most a few
		// hundred bytes per unit (a comprehension's step, a small list).
		if elapsed > 2*time.Second {
			t.Errorf("%s on %d bytes of input: took %v", expr, inputBytes, elapsed)
		}
		if limit := 4*inputBytes + 512*c.opts.CostLimit + 1<<20; allocated > limit {
			t.Errorf("%s on %d bytes of input: allocated %d bytes, over %d", expr, inputBytes, allocated, limit)
		}
	})
}

// scaled repeats every string and list in v factor times.
func scaled(v any, factor int) any {
	switch t := v.(type) {
	case string:
		return strings.Repeat(t, factor)
	case []any:
		out := make([]any, 0, len(t)*factor)
		for range factor {
			for _, e := range t {
				out = append(out, scaled(e, 1))
			}
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = scaled(e, factor)
		}
		return out
	}
	return v
}
