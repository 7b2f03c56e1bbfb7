package idempotency

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

// celKeyTracked evaluates with the cost-tracking program only: the reference
// for expressions that may skip tracking.
func (e *Expression) celKeyTracked(input, meta map[string]any) (string, error) {
	if input == nil {
		input = emptyObject
	}
	if meta == nil {
		meta = emptyObject
	}
	return e.eval(e.prg, input, meta)
}

func TestCostBoundEligibility(t *testing.T) {
	c := newTestCompiler(t, Options{})
	for expr, want := range map[string]bool{
		`"order:" + input.id + ":" + additional_metadata.tenant`: true,
		`checksum(input.a + input.b)`:                            true,
		`input.name.lowerAscii().trim()`:                         true,
		`has(input.id) ? input.id : "none"`:                      true,
		`has(input.order.id) ? input.order.id : string(input.n)`: true,
		`input["a b"] + b"x".string()`:                           false, // no such member overload; compile fails below
		`input.id.contains("x") ? "a" : "b"`:                     false,
		`input.id.replace("a", "b")`:                             false,
		`input.id.split(",")[0]`:                                 false,
		`["a", "b"].join("")`:                                    false,
		`string(size(input))`:                                    false,
		`input.items.map(x, x)[0]`:                               false,
		`input.id.matches("a+") ? "x" : "y"`:                     false,
		`input[input.k]`:                                         false,
		`{"a": input.id}.a`:                                      false,
	} {
		e, err := c.Compile(expr)
		if err != nil {
			continue
		}
		if got := e.bound != nil; got != want {
			t.Errorf("%s: bounded = %v, want %v", expr, got, want)
		}
		if (e.bound != nil) != (e.untracked != nil) {
			t.Errorf("%s: bound without its program", expr)
		}
	}
}

func TestCostBoundLimit(t *testing.T) {
	c := newTestCompiler(t, Options{CostLimit: 1000})
	e := mustCompile(t, c, `"k:" + input.a + input.b`)
	if e.bound == nil {
		t.Fatal("not bounded")
	}
	small := map[string]any{"a": "x", "b": "y"}
	if !e.bound.within(small, nil, 1000) {
		t.Errorf("small input not within the limit")
	}
	for _, input := range []map[string]any{
		{"a": strings.Repeat("x", 5000), "b": "y"},
		{"a": "x", "b": map[string]any{}},
		{"a": "x", "b": []any{"y"}},
		{"a": "x", "b": int64(1)},
	} {
		if e.bound.within(input, nil, 1000) {
			t.Errorf("within(%v) = true", input)
		}
	}
	if e.bound.within(small, nil, 0) || e.bound.within(small, nil, 1) {
		t.Error("within a zero limit")
	}
	// Long enough to exceed the limit when tracked.
	_, err := e.keyMap(map[string]any{"a": strings.Repeat("x", 20000), "b": "y"}, nil)
	if _, ok := err.(*Error); !ok {
		t.Errorf("Key = %v, want *Error", err)
	}
}

// randomKeyExpr builds straight-line key expressions, most of them eligible
// for evaluation without cost tracking.
func randomKeyExpr(r *rand.Rand, depth int) string {
	if depth <= 0 || r.IntN(4) == 0 {
		switch r.IntN(4) {
		case 0:
			return `"lit"`
		case 1:
			return `""`
		default:
			return randomChain(r)
		}
	}
	a := randomKeyExpr(r, depth-1)
	switch r.IntN(14) {
	case 0, 1, 2:
		return "(" + a + " + " + randomKeyExpr(r, depth-1) + ")"
	case 3:
		return a + ".lowerAscii()"
	case 4:
		return a + ".upperAscii()"
	case 5:
		return a + ".trim()"
	case 6:
		return a + ".substring(0, 1)"
	case 7:
		return "checksum(" + a + ")"
	case 8:
		return "string(size(" + a + "))"
	case 9:
		return "string(" + a + ")"
	case 10:
		return "(has(" + randomChain(r) + ") ? " + a + " : " + randomKeyExpr(r, depth-1) + ")"
	case 11:
		return "(" + a + " == " + randomKeyExpr(r, depth-1) + " ? " + a + ` : "ne")`
	case 12:
		return a + ".charAt(0)"
	default:
		return a + ".contains(" + randomKeyExpr(r, depth-1) + `) ? "c" : "n"`
	}
}

func randomSizedObject(r *rand.Rand, depth int) map[string]any {
	m := randomObject(r, depth)
	for _, k := range randomKeys {
		if r.IntN(3) == 0 {
			m[k] = strings.Repeat("Ab ", r.IntN(1500))
		}
	}
	return m
}

// Evaluating without cost tracking must give exactly what the tracked
// program gives, CostLimitError included: the bound must never let through
// an evaluation the limit would have stopped.
func TestCostBoundMatchesTracked(t *testing.T) {
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 1))
	c := newTestCompiler(t, Options{CostLimit: 600, MaxKeyLength: 100})
	iterations := 10000
	if testing.Short() {
		iterations = 1000
	}
	var bounded, untracked, stopped int
	for range iterations {
		expr := randomKeyExpr(r, 4)
		e, err := c.Compile(expr)
		if err != nil {
			continue // e.g. a chain used with has() on a type cel rejects
		}
		input, meta := randomSizedObject(r, 2), randomSizedObject(r, 2)
		gotKey, gotErr := e.keyMap(input, meta)
		wantKey, wantErr := e.celKeyTracked(input, meta)
		if gotKey != wantKey || !reflect.DeepEqual(gotErr, wantErr) {
			t.Fatalf("seed %d: %s on %v / %v:\nKey:     %q, %T %v\ntracked: %q, %T %v",
				seed, expr, input, meta, gotKey, gotErr, gotErr, wantKey, wantErr, wantErr)
		}
		if e.bound != nil {
			bounded++
			if e.bound.within(input, meta, 600) {
				untracked++
			}
		}
		if _, ok := wantErr.(*Error); ok {
			stopped++
		}
	}
	t.Logf("seed %d: %d bounded expressions, %d evaluated untracked, %d stopped at the limit", seed, bounded, untracked, stopped)
	// About 56% of the cases run untracked and 1.3% hit the limit; the
	// floors sit far enough below those that no seed falls short by chance.
	if untracked < iterations/10 || stopped < iterations/200 {
		t.Errorf("the random cases miss a side of the limit: %d untracked, %d stopped", untracked, stopped)
	}
}

// The bound must hold for the cost cel-go actually charges, whatever the limit.
func TestCostBoundIsAnUpperBound(t *testing.T) {
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 2))
	c := newTestCompiler(t, Options{})
	iterations := 5000
	if testing.Short() {
		iterations = 500
	}
	checked := 0
	for range iterations {
		expr := randomKeyExpr(r, 4)
		e, err := c.Compile(expr)
		if err != nil || e.bound == nil {
			continue
		}
		input, meta := randomSizedObject(r, 2), randomSizedObject(r, 2)
		bound, ok := e.bound.maxCost(input, meta, math.MaxUint64)
		if !ok {
			continue
		}
		ast, iss := c.env.Compile(expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		opts := append(programOptions(&evalLimits{cost: math.MaxUint64}), cel.EvalOptions(cel.OptTrackCost))
		prg, err := c.env.Program(ast, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, det, _ := prg.Eval(map[string]any{varInput: input, varMetadata: meta})
		actual := det.ActualCost()
		if actual == nil {
			t.Fatalf("%s: no actual cost", expr)
		}
		if *actual > bound {
			t.Fatalf("seed %d: %s on %v / %v: actual cost %d over the bound %d", seed, expr, input, meta, *actual, bound)
		}
		checked++
	}
	if checked < iterations/2 {
		t.Errorf("only %d of %d expressions checked", checked, iterations)
	}
}

// lowerAscii turns each byte of invalid UTF-8 into three, so a string
// holding some must not be evaluated untracked on a bound that counts its
// bytes once.
func TestCostBoundInvalidUTF8(t *testing.T) {
	c := newTestCompiler(t, Options{CostLimit: 5000, MaxKeyLength: 10_000})
	e := mustCompile(t, c, `input.a.lowerAscii() + input.a.lowerAscii()`)
	if e.bound == nil {
		t.Fatal("lowerAscii of a field is not bounded")
	}
	input := map[string]any{"a": strings.Repeat("\xff", 1000)}
	gotKey, gotErr := e.keyMap(input, nil)
	wantKey, wantErr := e.celKeyTracked(input, nil)
	if gotKey != wantKey || !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("Key = %d bytes, %v; tracked evaluation = %d bytes, %v", len(gotKey), gotErr, len(wantKey), wantErr)
	}
	if !errors.Is(gotErr, ErrCostLimit) {
		t.Fatalf("Key = %v, want the cost limit (6000 bytes built)", gotErr)
	}
}
