package idempotency

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// assertSameAsCEL checks that Key, which takes the fast path when it can,
// gives exactly the key or error that the cost-tracked CEL program gives.
func assertSameAsCEL(t *testing.T, e *Expression, input, meta map[string]any) {
	t.Helper()
	gotKey, gotErr := e.keyMap(input, meta)
	wantKey, wantErr := e.celKeyTracked(input, meta)
	if gotKey != wantKey || !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%s on input %v meta %v:\nfast path: %q, %T %v\ncel:       %q, %T %v",
			e.src, input, meta, gotKey, gotErr, gotErr, wantKey, wantErr, wantErr)
	}
}

func TestFastPathMatchesCEL(t *testing.T) {
	c := newTestCompiler(t, Options{MaxKeyLength: 8})
	exprs := []string{
		`input.id`,
		`input.a.b`,
		`input.a.b.c`,
		`input["a"]["b"]`,
		`input["a b"]`,
		`input[""]`,
		`additional_metadata.tenant`,
		`additional_metadata.a.b`,
	}
	values := []any{
		"x", "", "12345678", "123456789", "é", strings.Repeat("€", 3),
		float64(0), float64(1.5), math.Inf(1), true, false, nil,
		map[string]any{}, map[string]any{"b": "in"}, map[string]any{"b": map[string]any{"c": "deep"}},
		map[string]any{"b": float64(2)}, map[string]any{"b": nil}, map[string]any{"b": []any{}},
		map[string]any(nil),
		[]any{}, []any{"b"}, []any{map[string]any{"b": "x"}},
		// Not produced by encoding/json: the fast path must defer to CEL.
		int64(3), 7, uint(1), []string{"b"}, map[string]string{"b": "s"}, map[string]any{"b": int64(1)},
		[]byte("b"), struct{}{},
	}
	keys := []string{"id", "a", "a b", "", "tenant", "zz"}
	for _, expr := range exprs {
		e := mustCompile(t, c, expr)
		if e.fast == nil {
			t.Fatalf("%s: no fast path", expr)
		}
		assertSameAsCEL(t, e, nil, nil)
		assertSameAsCEL(t, e, map[string]any{}, map[string]any{})
		for _, k := range keys {
			for _, v := range values {
				m := map[string]any{k: v}
				assertSameAsCEL(t, e, m, nil)
				assertSameAsCEL(t, e, nil, m)
				assertSameAsCEL(t, e, m, m)
			}
		}
	}
}

// randomValue builds JSON-shaped values over a small key alphabet so that
// random chains often hit, miss and pass through every kind of value.
func randomValue(r *rand.Rand, depth int) any {
	if depth > 0 && r.IntN(2) == 0 {
		return randomObject(r, depth-1)
	}
	switch r.IntN(8) {
	case 0:
		return float64(r.IntN(100)) / 4
	case 1:
		return r.IntN(2) == 0
	case 2:
		return nil
	case 3:
		return []any{randomString(r)}
	default:
		return randomString(r)
	}
}

var randomKeys = []string{"a", "b", "id", "x-y", ""}

func randomObject(r *rand.Rand, depth int) map[string]any {
	m := make(map[string]any)
	for _, k := range randomKeys {
		if r.IntN(4) != 0 {
			m[k] = randomValue(r, depth)
		}
	}
	return m
}

func randomString(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("k", 5+r.IntN(10)) // around the length limit of 10
	default:
		return "v" + strconv.Itoa(r.IntN(10))
	}
}

func randomChain(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(3) == 0 {
		b.WriteString(varMetadata)
	} else {
		b.WriteString(varInput)
	}
	for range 1 + r.IntN(3) {
		k := randomKeys[r.IntN(len(randomKeys))]
		if isIdent(k) && r.IntN(2) == 0 {
			b.WriteString("." + k)
		} else {
			b.WriteString("[" + strconv.Quote(k) + "]")
		}
	}
	return b.String()
}

func TestFastPathMatchesCELRandomized(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	c := newTestCompiler(t, Options{MaxKeyLength: 10})
	iterations := 20000
	if testing.Short() {
		iterations = 2000
	}
	for i := range iterations {
		expr := randomChain(r)
		e := mustCompile(t, c, expr)
		if e.fast == nil {
			t.Fatalf("%s: no fast path", expr)
		}
		input, meta := randomObject(r, 3), randomObject(r, 3)
		if i%50 == 0 {
			input = nil
		}
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d iteration %d", seed, i)
				}
			}()
			assertSameAsCEL(t, e, input, meta)
		})
		if t.Failed() {
			return
		}
	}
}

// allocsPerRun is testing.AllocsPerRun's count, the least of five
// measurements. Under the race detector (make test) a sync.Pool drops
// what is put back at random, so now and then a measurement counts the
// pool's allocations too (1 in 30 gave 2 for Key's 1); nothing
// makes one count fewer than the code allocates.
func allocsPerRun(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for range 4 {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}

func TestFastPathAllocations(t *testing.T) {
	c := newTestCompiler(t, Options{})
	input := map[string]any{"id": "abc", "order": map[string]any{"id": "o-1"}}
	meta := map[string]any{"tenant": "acme"}
	for _, expr := range []string{`input.id`, `input.order.id`, `additional_metadata.tenant`} {
		e := mustCompile(t, c, expr)
		allocs := allocsPerRun(100, func() {
			if _, err := e.keyMap(input, meta); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Errorf("%s: %v allocations per key, want 0", expr, allocs)
		}
	}
}

func ExampleExpression_Key() {
	c, _ := NewCompiler(Options{})
	e, _ := c.Compile(`"order:" + input.order.id + ":" + additional_metadata.tenant`)
	key, _ := e.keyMap(map[string]any{"order": map[string]any{"id": "o-17"}}, map[string]any{"tenant": "acme"})
	fmt.Println(key)
	_, err := e.keyMap(map[string]any{}, nil)
	fmt.Println(err)
	// Output:
	// order:o-17:acme
	// idempotency: evaluating "\"order:\" + input.order.id + \":\" + additional_metadata.tenant": field input.order: no such key: order
}
