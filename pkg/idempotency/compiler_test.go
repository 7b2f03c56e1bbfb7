package idempotency

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestOptionsDefaults(t *testing.T) {
	c := newTestCompiler(t, Options{})
	want := Options{
		MaxKeyLength:    MaxKeyLengthDefault,
		CostLimit:       CostLimitDefault,
		CacheSize:       CacheSizeDefault,
		MaxInputDepth:   MaxInputDepthDefault,
		MaxStringBytes:  MaxStringBytesDefault,
		MaxListElements: MaxListElementsDefault,
	}
	if got := c.opts; got != want {
		t.Errorf("Options() = %+v, want %+v", got, want)
	}
	custom := Options{MaxKeyLength: 10, CostLimit: 5, CacheSize: 2, MaxInputDepth: 3, MaxStringBytes: 7, MaxListElements: 8}
	if got := newTestCompiler(t, custom).opts; got != custom {
		t.Errorf("Options() = %+v, want %+v", got, custom)
	}
	for _, bad := range []Options{{MaxKeyLength: -1}, {CacheSize: -1}, {MaxInputDepth: -1}, {MaxStringBytes: -1}, {MaxListElements: -1}} {
		if _, err := NewCompiler(bad); err == nil {
			t.Errorf("NewCompiler(%+v) succeeded", bad)
		}
	}
}

func TestCompileCache(t *testing.T) {
	c := newTestCompiler(t, Options{CacheSize: 2})
	a1 := mustCompile(t, c, `input.a`)
	if a2 := mustCompile(t, c, `input.a`); a1 != a2 {
		t.Fatal("same source compiled twice into different *Expression")
	}
	mustCompile(t, c, `input.b`)
	mustCompile(t, c, `input.a`) // a is now the most recently used
	mustCompile(t, c, `input.c`) // evicts b
	if a := mustCompile(t, c, `input.a`); a != a1 {
		t.Error("recently used expression was evicted")
	}
	if n := len(c.index); n != 2 || c.lru.Len() != 2 {
		t.Errorf("cache holds %d/%d entries, want 2", n, c.lru.Len())
	}
	if _, ok := c.index[`input.b`]; ok {
		t.Error("least recently used expression was kept")
	}
	// Failures are not cached, and do not disturb what is.
	for range 2 {
		if _, err := c.Compile(`input.`); !errors.Is(err, ErrCompile) {
			t.Fatalf("Compile(bad) = %v", err)
		}
	}
	if len(c.index) != 2 {
		t.Errorf("failed compile was cached")
	}
}

func TestFastPathDetection(t *testing.T) {
	c := newTestCompiler(t, Options{})
	for expr, want := range map[string]bool{
		`input.id`:                              true,
		`input.order.id`:                        true,
		`additional_metadata.tenant`:            true,
		`input["id"]`:                           true,
		`input["a b"].c["d"]`:                   true,
		`input`:                                 false,
		`additional_metadata`:                   false,
		`input.id + ""`:                         false,
		`input[input.k]`:                        false,
		`input.list[0]`:                         false,
		`has(input.id)`:                         false,
		`input.id.lowerAscii()`:                 false,
		`"input.id"`:                            false,
		`[input][0].id`:                         false,
		`{"id": input.id}.id`:                   false,
		`input.id == "x" ? "a" : "b"`:           false,
		`input.items.map(x, x.id)[0]`:           false,
		`input.items.exists(i, i.id)`:           false,
		`[{"id": "x"}].map(input, input.id)[0]`: false,
	} {
		e, err := c.Compile(expr)
		if err != nil {
			continue // a comprehension variable may not shadow input in every version
		}
		if got := e.fast != nil; got != want {
			t.Errorf("%s: fast path = %v, want %v", expr, got, want)
		}
	}
	e := mustCompile(t, c, `input["a b"].c["d"]`)
	if got := e.fast.paths; fmt.Sprint(got) != `[input["a b"] input["a b"].c input["a b"].c.d]` {
		t.Errorf("paths = %q", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	c := newTestCompiler(t, Options{CacheSize: 8})
	exprs := []string{
		`input.id`,
		`"order:" + input.id + ":" + additional_metadata.tenant`,
		`checksum(input.id)`,
		`input.missing`,
		`input.n`,
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				id := fmt.Sprintf("id-%d-%d", g, i)
				input := map[string]any{"id": id, "n": float64(i)}
				meta := map[string]any{"tenant": "t"}
				// Extra sources churn the small cache while others hit it.
				if _, err := c.Compile(fmt.Sprintf(`input.id + "%d"`, i%20)); err != nil {
					t.Error(err)
					return
				}
				e, err := c.Compile(exprs[i%len(exprs)])
				if err != nil {
					t.Error(err)
					return
				}
				key, err := e.keyMap(input, meta)
				switch i % len(exprs) {
				case 0:
					if key != id || err != nil {
						t.Errorf("Key = %q, %v", key, err)
					}
				case 1:
					if key != "order:"+id+":t" || err != nil {
						t.Errorf("Key = %q, %v", key, err)
					}
				case 2:
					if key != sha256Hex(id) || err != nil {
						t.Errorf("Key = %q, %v", key, err)
					}
				case 3:
					if !errors.Is(err, ErrEval) {
						t.Errorf("Key = %q, %v", key, err)
					}
				case 4:
					if !errors.Is(err, ErrNotString) {
						t.Errorf("Key = %q, %v", key, err)
					}
				}
				if _, err := e.Key([]byte(`{"id":"`+id+`","n":1}`), []byte(`{"tenant":"t"}`)); err != nil &&
					!errors.Is(err, ErrEval) && !errors.Is(err, ErrNotString) {
					t.Errorf("Key: %v", err)
				}
			}
		}()
	}
	wg.Wait()
}
