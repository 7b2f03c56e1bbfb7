package idempotency

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var (
	fuzzCompilerOnce sync.Once
	fuzzCompiler     *Compiler
)

// FuzzKey feeds arbitrary expressions and input JSON through the package. No
// input may panic, every failure must be one of the typed errors, a key must
// obey the length rules, and where the fast path or evaluation without cost
// tracking applies it must agree with the cost-tracked CEL program exactly.
func FuzzKey(f *testing.F) {
	seeds := []struct{ expr, input string }{
		{`input.id`, `{"id":"abc"}`},
		{`input.id`, `{"id":1.5}`},
		{`input.id`, `{"id":null}`},
		{`input.id`, `{"id":""}`},
		{`input.id`, `{"id":[1]}`},
		{`input.id`, `{}`},
		{`input.order.id`, `{"order":{"id":"o"}}`},
		{`input.order.id`, `{"order":[]}`},
		{`input.order.id`, `{"order":"s"}`},
		{`input["a b"]["c"]`, `{"a b":{"c":"d"}}`},
		{`additional_metadata.tenant`, `{"tenant":"acme"}`},
		{`"order:" + input.id + ":" + additional_metadata.tenant`, `{"id":"x"}`},
		{`checksum(input.a + input.b)`, `{"a":"1","b":"2"}`},
		{`input.name.lowerAscii()`, `{"name":"ADA"}`},
		{`"k:" + input.a.upperAscii() + checksum(input.a + input.a)`, `{"a":"` + strings.Repeat("ab", 3000) + `"}`},
		{`has(input.a) ? input.a.trim() : string(input.n)`, `{"n":2.5}`},
		{`size(input.id)`, `{"id":"abc"}`},
		{`[1,2,3].map(x, [1,2,3].map(y, string(x*y)))[2][2]`, `{}`},
		{`input.s.replace("a", "aa").replace("a", "aa")`, `{"s":"aaaa"}`},
		{`input.`, `{}`},
		{`input.id`, `[1]`},
		{`input.id`, `{"id":`},
		{`input.id`, `{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{}}}}}}}}}`},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.input)
	}
	fuzzCompilerOnce.Do(func() {
		c, err := NewCompiler(Options{MaxKeyLength: 16, CacheSize: 256, MaxInputDepth: 8})
		if err != nil {
			f.Fatal(err)
		}
		fuzzCompiler = c
	})
	f.Fuzz(func(t *testing.T, expr, inputJSON string) {
		c := fuzzCompiler
		e, err := c.Compile(expr)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrCompile) {
				t.Fatalf("Compile(%q) = %T %v, want *Error", expr, err, err)
			}
			return
		}
		meta := []byte(`{"tenant":"acme","id":"m"}`)
		key, err := e.Key([]byte(inputJSON), meta)
		checkKeyResult(t, e, key, err)
		if e.fast != nil {
			// Key reads a field path straight out of the JSON.
			assertKeyJSONAsDecoded(t, e, inputJSON, string(meta))
			assertKeyJSONAsDecoded(t, e, inputJSON, inputJSON)
		}

		input, err := decodeObject(varInput, []byte(inputJSON), c.opts.MaxInputDepth)
		if err != nil {
			return
		}
		md, _ := decodeObject(varMetadata, meta, c.opts.MaxInputDepth)
		if e.fast != nil {
			assertSameAsCEL(t, e, input, md)
		}
		if e.bound != nil {
			gotKey, gotErr := e.keyMap(input, md)
			wantKey, wantErr := e.celKeyTracked(input, md)
			if gotKey != wantKey || !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("%s: Key = %q, %v; tracked evaluation = %q, %v", expr, gotKey, gotErr, wantKey, wantErr)
			}
		}
	})
}

func checkKeyResult(t *testing.T, e *Expression, key string, err error) {
	t.Helper()
	if err == nil {
		if key == "" || len(key) > e.maxKeyLength {
			t.Fatalf("%q: accepted key %q breaks the length rules", e.src, key)
		}
		return
	}
	if key != "" {
		t.Fatalf("%q: key %q returned with error %v", e.src, key, err)
	}
	for _, sentinel := range []error{ErrNotString, ErrEmptyKey, ErrKeyTooLong, ErrEval, ErrCostLimit, ErrInput} {
		if errors.Is(err, sentinel) {
			return
		}
	}
	t.Fatalf("%q: untyped error %T %v", e.src, err, err)
}
