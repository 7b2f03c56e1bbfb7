package idempotency

import (
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each bounded function with arguments that build exactly the limit, which
// it builds, and one more, which it refuses with an ErrSizeLimit *Error naming it.
func TestSizeLimitAtAndJustOver(t *testing.T) {
	c := newTestCompiler(t, Options{CostLimit: 1_000_000_000, MaxStringBytes: 100, MaxListElements: 10, MaxKeyLength: 4096})
	x := strings.Repeat
	list := func(n int) []any { return make([]any, n) }
	tests := []struct {
		name, expr string
		at, over   map[string]any
		function   string
		unit       string
	}{
		{"string +", `input.a + input.b`,
			map[string]any{"a": x("a", 50), "b": x("b", 50)}, map[string]any{"a": x("a", 50), "b": x("b", 51)}, "+", UnitBytes},
		{"bytes +", `string(bytes(input.a) + bytes(input.b))`,
			map[string]any{"a": x("a", 50), "b": x("b", 50)}, map[string]any{"a": x("a", 51), "b": x("b", 50)}, "+", UnitBytes},
		{"replace", `input.s.replace("a", "bb")`,
			map[string]any{"s": x("a", 50)}, map[string]any{"s": x("a", 50) + "c"}, "replace", UnitBytes},
		{"replace with a count", `input.s.replace("a", "bbbb", 25)`,
			map[string]any{"s": x("a", 25)}, map[string]any{"s": x("a", 26)}, "replace", UnitBytes},
		{"lowerAscii", `input.s.lowerAscii()`,
			map[string]any{"s": x("A", 100)}, map[string]any{"s": x("A", 101)}, "lowerAscii", UnitBytes},
		{"upperAscii", `input.s.upperAscii()`,
			map[string]any{"s": x("a", 100)}, map[string]any{"s": x("a", 101)}, "upperAscii", UnitBytes},
		{"reverse", `input.s.reverse()`,
			map[string]any{"s": x("é", 50)}, map[string]any{"s": x("é", 50) + "a"}, "reverse", UnitBytes},
		{"substring", `input.s.substring(1)`,
			map[string]any{"s": x("a", 101)}, map[string]any{"s": x("a", 102)}, "substring", UnitBytes},
		{"substring with an end", `input.s.substring(1, 51)`,
			map[string]any{"s": x("é", 60)}, map[string]any{"s": "a" + x("é", 49) + "€a"}, "substring", UnitBytes},
		{"format", `"<%s>".format([input.s])`,
			map[string]any{"s": x("a", 98)}, map[string]any{"s": x("a", 99)}, "format", UnitBytes},
		{"format of a list", `"%s~~~~".format([input.l])`,
			// [null, null, ...]: 6 per element, and 4 more.
			map[string]any{"l": list(16)}, map[string]any{"l": list(17)}, "format", UnitBytes},
		{"format of numbers", `"%.2f %x %d".format([input.a, input.s, input.b])`,
			// 30.00 (5) + 1 + hex (2 per byte) + 1 + 1e20 (21 digits).
			map[string]any{"a": 30.0, "s": x("a", 36), "b": 1e20}, map[string]any{"a": 300.0, "s": x("a", 36), "b": 1e20}, "format", UnitBytes},
		{"join", `input.l.join("-")`,
			map[string]any{"l": []any{x("a", 49), x("b", 50)}}, map[string]any{"l": []any{x("a", 50), x("b", 50)}}, "join", UnitBytes},
		{"strings.quote", `strings.quote(input.s)`,
			map[string]any{"s": x("\n", 49)}, map[string]any{"s": x("\n", 49) + "a"}, "strings.quote", UnitBytes},
		{"split", `string(size(input.s.split(",")))`,
			map[string]any{"s": x(",", 9)}, map[string]any{"s": x(",", 10)}, "split", UnitElements},
		{"split into characters", `string(size(input.s.split("")))`,
			map[string]any{"s": x("é", 10)}, map[string]any{"s": x("é", 11)}, "split", UnitElements},
		{"list +", `string(size(input.l + input.m))`,
			map[string]any{"l": list(5), "m": list(5)}, map[string]any{"l": list(5), "m": list(6)}, "+", UnitElements},
		{"map()", `string(size(input.l.map(x, x)))`,
			map[string]any{"l": list(10)}, map[string]any{"l": list(11)}, "+", UnitElements},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustCompile(t, c, tc.expr)
			if key, err := e.keyMap(tc.at, nil); err != nil {
				t.Fatalf("at the limit: %v", err)
			} else if tc.unit == UnitBytes && len(key) != 100 {
				t.Fatalf("at the limit: key of %d bytes, want 100", len(key))
			}
			_, err := e.keyMap(tc.over, nil)
			var se *Error
			if !errors.As(err, &se) || !errors.Is(err, ErrSizeLimit) || !errors.Is(err, ErrCostLimit) {
				t.Fatalf("just over the limit: %T %v, want *Error", err, err)
			}
			limit := uint64(100)
			if tc.unit == UnitElements {
				limit = 10
			}
			if se.Function != tc.function || se.Unit != tc.unit || se.Limit != limit || se.Size <= limit || se.Expr != tc.expr {
				t.Fatalf("just over the limit: %+v", se)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.function+" would build") || !strings.Contains(msg, "limit of "+strconv.FormatUint(limit, 10)) {
				t.Errorf("message %q does not name the function and the limit", msg)
			}
		})
	}
}

// Each function whose own cost reaches the limit runs (and the evaluation is
// then stopped by its running total, the selects around it counted), and
// one costing more is refused before it runs with a *Error naming
// it.
func TestCostLimitAtAndJustOver(t *testing.T) {
	x := strings.Repeat
	tests := []struct {
		name, expr string
		limit      uint64
		at, over   map[string]any
		function   string
		cost       uint64 // of the call just over
	}{
		// 1 + ceil(n*m/10)
		{"indexOf", `string(input.s.indexOf("b"))`, 1001,
			map[string]any{"s": x("a", 10_000)}, map[string]any{"s": x("a", 10_001)}, "indexOf", 1002},
		{"indexOf with an offset", `string(input.s.indexOf(input.t, 3))`, 1001,
			map[string]any{"s": x("a", 100), "t": x("b", 100)}, map[string]any{"s": x("a", 101), "t": x("b", 100)}, "indexOf", 1011},
		{"indexOf of nothing", `string(input.s.indexOf(""))`, 1001,
			map[string]any{"s": x("a", 10_000)}, map[string]any{"s": x("a", 10_001)}, "indexOf", 1002},
		{"lastIndexOf", `string(input.s.lastIndexOf("b"))`, 1001,
			map[string]any{"s": x("a", 10_000)}, map[string]any{"s": x("a", 10_001)}, "lastIndexOf", 1002},
		// 2 + ceil(n/10)
		{"charAt", `input.s.charAt(0)`, 1002,
			map[string]any{"s": x("a", 10_000)}, map[string]any{"s": x("a", 10_001)}, "charAt", 1003},
		// 1 + n/10
		{"checksum", `checksum(input.s)`, 1001,
			map[string]any{"s": x("a", 10_009)}, map[string]any{"s": x("a", 10_010)}, "checksum", 1002},
		// ceil((n+1)/10) * ceil(program/4); "b" compiles to 3 instructions.
		{"matches a constant", `input.s.matches("b") ? "y" : "n"`, 1000,
			map[string]any{"s": x("a", 9_999)}, map[string]any{"s": x("a", 10_000)}, "matches", 1001},
		{"matches a pattern from the input", `input.s.matches(input.p) ? "y" : "n"`, 1000,
			map[string]any{"s": x("a", 9_999), "p": "b"}, map[string]any{"s": x("a", 10_000), "p": "b"}, "matches", 1001},
		// A short pattern estimated at 2,203 instructions: 551 per 10 bytes.
		{"matches a repetition", `input.s.matches(input.p) ? "y" : "n"`, 551 * 10,
			map[string]any{"s": x("a", 99), "p": "(x){550}"}, map[string]any{"s": x("a", 100), "p": "(x){550}"}, "matches", 551 * 11},
		// 1 + ceil(n/10) + result
		{"lowerAscii", `input.s.lowerAscii()`, 1101,
			map[string]any{"s": x("A", 1000)}, map[string]any{"s": x("A", 1001)}, "lowerAscii", 1103},
		{"trim", `input.s.trim()`, 1101,
			map[string]any{"s": x("a", 1000)}, map[string]any{"s": x("a", 1001)}, "trim", 1103},
		// 1 + ceil(n*m/10) + result: no match, so the result is s.
		{"replace", `input.s.replace(input.t, "")`, 1091,
			map[string]any{"s": x("a", 100), "t": x("b", 99)}, map[string]any{"s": x("a", 100), "t": x("b", 100)}, "replace", 1101},
		// 1 + ceil((n+1)/10) + parts + 10
		{"split", `string(size(input.s.split(",")))`, 1111,
			map[string]any{"s": x(",", 999)}, map[string]any{"s": x(",", 1000)}, "split", 1113},
		// ceil(len(format)/10) + ceil(result/10)
		{"format", `"%s".format([input.s])`, 1001,
			map[string]any{"s": x("a", 10_000)}, map[string]any{"s": x("a", 10_001)}, "format", 1002},
		// ceil(n/10) + ceil(result/10)
		{"strings.quote", `strings.quote(input.s)`, 3000,
			map[string]any{"s": x("\n", 9_999)}, map[string]any{"s": x("\n", 10_000)}, "strings.quote", 3001},
		// 1 + ceil((elements+1)/10) + result
		{"join", `input.l.join()`, 1002,
			map[string]any{"l": []any{x("a", 1000)}}, map[string]any{"l": []any{x("a", 1001)}}, "join", 1003},
		// ceil((l+r)/10)
		{"+", `input.a + input.b`, 1000,
			map[string]any{"a": x("a", 5000), "b": x("b", 5000)}, map[string]any{"a": x("a", 5001), "b": x("b", 5000)}, "+", 1001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCompiler(t, Options{CostLimit: tc.limit, MaxStringBytes: 1 << 20, MaxKeyLength: 1 << 20})
			e := mustCompile(t, c, tc.expr)
			var ce *Error
			if _, err := e.keyMap(tc.at, nil); err != nil && (!errors.As(err, &ce) || ce.Function != "") {
				t.Fatalf("at the limit: %v, want the call to run", err)
			}
			_, err := e.keyMap(tc.over, nil)
			if !errors.As(err, &ce) || !errors.Is(err, ErrCostLimit) {
				t.Fatalf("just over the limit: %T %v, want *Error", err, err)
			}
			if ce.Function != tc.function || ce.Size != tc.cost || ce.Limit != tc.limit || ce.Expr != tc.expr {
				t.Fatalf("just over the limit: %+v, want %s refused at cost %d", ce, tc.function, tc.cost)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.function+" would cost "+strconv.FormatUint(tc.cost, 10)) ||
				!strings.Contains(msg, "cost limit of "+strconv.FormatUint(tc.limit, 10)) {
				t.Errorf("message %q does not name the function and the limit", msg)
			}
		})
	}
}

// hostileCases are evaluations that, unbounded, take seconds to minutes or
// gigabytes of memory (the first ones are the reports that led to the
// checks). Each must end in a typed limit error.
func hostileCases() []struct {
	name, expr string
	input      map[string]any
} {
	x := strings.Repeat
	nulls := make([]any, 200_000)
	empties := make([]any, 10_000)
	for i := range empties {
		empties[i] = ""
	}
	return []struct {
		name, expr string
		input      map[string]any
	}{
		// 10 GB.
		{"replace 100k by 100k", `input.a.replace(input.b, input.c)`,
			map[string]any{"a": x("a", 100_000), "b": "", "c": x("c", 100_000)}},
		// 1 GB.
		{"replace 30k by 30k", `input.a.replace(input.b, input.c)`,
			map[string]any{"a": x("a", 30_000), "b": "", "c": x("c", 30_000)}},
		{"replace with a count", `input.a.replace("a", input.c, 100000)`,
			map[string]any{"a": x("a", 100_000), "c": x("c", 100_000)}},
		// 10^10 character comparisons.
		{"indexOf 200k in 400k", `string(input.a.indexOf(input.b))`,
			map[string]any{"a": x("a", 400_000), "b": x("a", 199_999) + "b"}},
		{"lastIndexOf 200k in 400k", `string(input.a.lastIndexOf(input.b))`,
			map[string]any{"a": x("a", 400_000), "b": "b" + x("a", 199_999)}},
		// 2^30 bytes by doubling.
		{"doubling by concatenation", `[input.a].map(a, [a+a].map(b, [b+b].map(c, [c+c].map(d, [d+d].map(e, [e+e].map(f, [f+f].map(g, [g+g].map(h, [h+h].map(i, [i+i].map(j, j+j))))))))))[0][0][0][0][0][0][0][0][0][0]`,
			map[string]any{"a": x("a", 1<<20)}},
		{"doubling a list", `string(size([input.l].map(a, [a+a].map(b, [b+b].map(c, [c+c].map(d, d + d))))[0][0][0][0]))`,
			map[string]any{"l": nulls}},
		// 10^4 x 100 kB.
		{"join with a long separator", `input.l.join(input.s)`,
			map[string]any{"l": empties, "s": x("s", 100_000)}},
		{"split into characters", `string(size(input.s.split("")))`,
			map[string]any{"s": x("é", 500_000)}},
		{"format of a long list", `"%s%s%s%s".format([input.l, input.l, input.l, input.l])`,
			map[string]any{"l": nulls}},
		{"quote", `strings.quote(input.s)`,
			map[string]any{"s": x("\n", 1<<20)}},
		// An NFA of 100,000 states over 100 kB.
		{"regex from the input", `input.s.matches(input.p) ? "y" : "n"`,
			map[string]any{"s": x("x", 100_000), "p": "(" + x("x", 99) + "y){1000}"}},
		// Reads charged as free by cel-go, repeated: exists() goes on past
		// errors and false, so every element reads the whole string again.
		{"size() in a loop", `input.l.exists(x, size(input.s) == 1) ? "y" : "n"`,
			map[string]any{"l": nulls, "s": x("é", 500_000)}},
		{"equality in a loop", `input.l.exists(x, input.s == input.t) ? "y" : "n"`,
			map[string]any{"l": nulls, "s": x("a", 500_000), "t": x("a", 499_999) + "b"}},
		{"equality of nested lists in a loop", `input.l.exists(x, input.m == input.n) ? "y" : "n"`,
			map[string]any{"l": nulls, "m": []any{nulls}, "n": []any{append(nulls[:len(nulls)-1:len(nulls)-1], 1.0)}}},
		{"int() in a loop", `input.l.exists(x, int(input.s) == 1) ? "y" : "n"`,
			map[string]any{"l": nulls, "s": x("9", 500_000)}},
		{"refused calls in a loop", `input.l.exists(x, "%s".format([input.l]) == "") ? "y" : "n"`,
			map[string]any{"l": nulls}},
	}
}

// The reported cases and others like them end within milliseconds,
// allocating no more than a small multiple of their input, where unbounded
// they took seconds to minutes, gigabytes, or the process.
func TestHostileEvaluationsAreStoppedBeforeTheyAllocate(t *testing.T) {
	c := newTestCompiler(t, Options{})
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			e := mustCompile(t, c, tc.expr)
			inputBytes := jsonSize(t, tc.input)
			allocated, elapsed, key, err := measure(func() (string, error) { return e.keyMap(tc.input, nil) })
			if !errors.Is(err, ErrCostLimit) {
				t.Fatalf("Key = %.40q, %v; want an evaluation limit", key, err)
			}
			t.Logf("%v after %v, %d kB allocated for %d kB of input", err, elapsed, allocated>>10, inputBytes>>10)
			// Bounds generous enough for a loaded machine and the race
			// detector; unbounded, each case takes seconds or gigabytes.
			if elapsed > 2*time.Second {
				t.Errorf("took %v", elapsed)
			}
			if limit := 4*inputBytes + 1<<20; allocated > limit {
				t.Errorf("allocated %d bytes, over %d", allocated, limit)
			}
		})
	}
}

// measure runs f, reporting the bytes it allocated and the time it took.
// Tests calling it must not run in parallel.
func measure(f func() (string, error)) (allocated uint64, elapsed time.Duration, key string, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	key, err = f()
	elapsed = time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, elapsed, key, err
}

func jsonSize(t testing.TB, v any) uint64 {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(len(b))
}

// Every function an expression may call is either checked before it runs or
// reviewed as unable to build more than its arguments or to work past what
// costModel charges it. A cel-go upgrade that declares a new function fails
// here until it is reviewed.
func TestEveryFunctionIsBounded(t *testing.T) {
	checked := map[string]bool{checksumFunction: true, "_+_": true, "matches": true}
	for name := range stringsFunctions {
		checked[name] = true
	}
	reviewed := map[string]string{}
	for _, name := range []string{"size", "contains", "startsWith", "endsWith", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
		"@in", "_in_", "in", "int", "uint", "double", "bool", "bytes", "string", "timestamp", "duration"} {
		reviewed[name] = "reads its arguments, charged by costModel per byte or element"
	}
	for _, name := range []string{"!_", "-_", "_%_", "_*_", "_-_", "_/_", "_&&_", "_||_", "_?_:_", "_[_]",
		"@not_strictly_false", "__not_strictly_false__", "dyn", "type"} {
		reviewed[name] = "fixed-size work on its arguments"
	}
	for _, name := range []string{"getFullYear", "getMonth", "getDayOfYear", "getDate", "getDayOfMonth", "getDayOfWeek",
		"getHours", "getMinutes", "getSeconds", "getMilliseconds"} {
		reviewed[name] = "fixed-size work; a time zone name charged by costModel"
	}
	c := newTestCompiler(t, Options{})
	for name := range c.env.Functions() {
		if !checked[name] && reviewed[name] == "" {
			t.Errorf("function %s is neither checked before it runs nor reviewed", name)
		}
	}
}

// Calls on input's fields are dispatched at run time; cel-go's own prices
// charged them 1 whatever the size of their arguments.
func TestCostModelChargesCallsOnDynFields(t *testing.T) {
	c := newTestCompiler(t, Options{})
	x := strings.Repeat
	input := map[string]any{"a": x("a", 1000), "b": x("a", 1000), "n": x("9", 1000), "p": "(x){10}", "l": []any{x("a", 1000)}}
	for expr, atLeast := range map[string]uint64{
		`input.a + input.b`:           200,
		`size(input.a)`:               100,
		`input.a == input.b`:          100,
		`input.a < input.b`:           100,
		`input.a.contains(input.b)`:   100,
		`input.a.startsWith(input.b)`: 100,
		`int(input.n)`:                100,
		`input.a in input.l`:          100,
		`input.a.matches(input.p)`:    100 * 10,
		`[input.l] == [input.l]`:      100,
	} {
		ast, iss := c.env.Compile(expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		prg, err := c.env.Program(ast, programOptions(&evalLimits{cost: 1 << 40})...)
		if err != nil {
			t.Fatal(err)
		}
		_, det, _ := prg.Eval(map[string]any{varInput: input, varMetadata: map[string]any{}})
		if cost := det.ActualCost(); cost == nil || *cost < atLeast {
			t.Errorf("%s: charged %v, want at least %d", expr, *cost, atLeast)
		}
	}
}
