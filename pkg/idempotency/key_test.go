package idempotency

import (
	"errors"
	"strings"
	"testing"
)

func newTestCompiler(t testing.TB, opts Options) *Compiler {
	t.Helper()
	c, err := NewCompiler(opts)
	if err != nil {
		t.Fatalf("NewCompiler: %v", err)
	}
	return c
}

func mustCompile(t testing.TB, c *Compiler, expr string) *Expression {
	t.Helper()
	e, err := c.Compile(expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	return e
}

func TestKey(t *testing.T) {
	c := newTestCompiler(t, Options{})
	input := map[string]any{
		"id":      "abc",
		"name":    "Ada LOVELACE",
		"email":   "  Ada@Example.COM ",
		"order":   map[string]any{"id": "o-1", "lines": []any{"x", "y"}, "total": 12.5},
		"n":       float64(7),
		"a":       "left",
		"b":       "right",
		"odd-key": "dash",
	}
	meta := map[string]any{"tenant": "acme", "source": "webhook"}
	tests := []struct {
		expr string
		want string
	}{
		{`input.id`, "abc"},
		{`input.order.id`, "o-1"},
		{`input["order"]["id"]`, "o-1"},
		{`input["odd-key"]`, "dash"},
		{`additional_metadata.tenant`, "acme"},
		{`"order:" + input.id + ":" + additional_metadata.tenant`, "order:abc:acme"},
		{`input.name.lowerAscii()`, "ada lovelace"},
		{`input.name.upperAscii()`, "ADA LOVELACE"},
		{`input.email.trim().lowerAscii()`, "ada@example.com"},
		{`input.order.lines.join("-")`, "x-y"},
		{`input.name.replace(" ", "_")`, "Ada_LOVELACE"},
		{`input.name.split(" ")[1]`, "LOVELACE"},
		{`input.name.substring(0, 3)`, "Ada"},
		{`string(int(input.n))`, "7"},
		{`string(input.order.total)`, "12.5"},
		{`has(input.missing) ? input.missing : "default:" + input.id`, "default:abc"},
		{`checksum(input.a + input.b)`, sha256Hex("leftright")},
		{`checksum("")`, sha256Hex("")},
		{`"%s/%s".format([input.id, additional_metadata.source])`, "abc/webhook"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e := mustCompile(t, c, tc.expr)
			if e.src != tc.expr {
				t.Errorf("src = %q", e.src)
			}
			got, err := e.keyMap(input, meta)
			if err != nil || got != tc.want {
				t.Fatalf("Key = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestChecksumMatchesSHA256(t *testing.T) {
	c := newTestCompiler(t, Options{})
	e := mustCompile(t, c, `checksum(input.s)`)
	for _, s := range []string{"", "a", "hello world", strings.Repeat("é☃", 1000), "\x00\xff"} {
		got, err := e.keyMap(map[string]any{"s": s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := sha256Hex(s); got != want {
			t.Errorf("checksum(%q) = %s, want %s", s, got, want)
		}
		if strings.ToLower(got) != got || len(got) != 64 {
			t.Errorf("checksum(%q) = %s, want 64 lowercase hex digits", s, got)
		}
	}
}

func TestKeyNilMaps(t *testing.T) {
	c := newTestCompiler(t, Options{})
	e := mustCompile(t, c, `"static"`)
	if got, err := e.keyMap(nil, nil); err != nil || got != "static" {
		t.Fatalf("Key(nil, nil) = %q, %v", got, err)
	}
	e = mustCompile(t, c, `"t:" + string(size(additional_metadata))`)
	if got, err := e.keyMap(nil, nil); err != nil || got != "t:0" {
		t.Fatalf("Key(nil, nil) = %q, %v", got, err)
	}
	e = mustCompile(t, c, `additional_metadata.tenant`)
	_, err := e.keyMap(map[string]any{"tenant": "x"}, nil)
	var ee *Error
	if !errors.As(err, &ee) || ee.Field != "additional_metadata.tenant" {
		t.Fatalf("Key with nil meta: %v", err)
	}
}

func TestKeyJSON(t *testing.T) {
	c := newTestCompiler(t, Options{})
	e := mustCompile(t, c, `input.id + "@" + additional_metadata.tenant`)
	got, err := e.Key([]byte(` {"id": "r1", "n": [1, {"x": "]"}]}`), []byte(`{"tenant":"acme"}`))
	if err != nil || got != "r1@acme" {
		t.Fatalf("Key = %q, %v", got, err)
	}

	e = mustCompile(t, c, `"fixed"`)
	for _, in := range [][]byte{nil, {}, []byte("  \n")} {
		if got, err := e.Key(in, in); err != nil || got != "fixed" {
			t.Errorf("Key(%q) = %q, %v; empty input should be an empty object", in, got, err)
		}
	}
}

func TestKeyJSONInputErrors(t *testing.T) {
	c := newTestCompiler(t, Options{})
	e := mustCompile(t, c, `"fixed"`)
	tests := []struct {
		name        string
		input, meta string
		want        string // in the message
	}{
		{"array", `[1,2]`, ``, "input must be a JSON object, got an array"},
		{"string", `"x"`, ``, "got a string"},
		{"number", `12`, ``, "got a number"},
		{"null", `null`, ``, "got null"},
		{"bool", `true`, ``, "got a boolean"},
		{"meta array", `{}`, `[]`, "additional_metadata must be a JSON object"},
		{"invalid", `{"a":`, ``, "input is not valid JSON"},
		{"trailing", `{} x`, ``, "input is not valid JSON"},
		{"garbage", `}`, ``, "got invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Key([]byte(tc.input), []byte(tc.meta))
			var ie *Error
			if !errors.As(err, &ie) || !errors.Is(err, ErrInput) {
				t.Fatalf("Key = %v, want *Error", err)
			}
			if !strings.Contains(ie.Message, tc.want) {
				t.Errorf("message %q does not contain %q", ie.Message, tc.want)
			}
		})
	}
}

func nested(depth int, leaf string) string {
	return strings.Repeat(`{"a":`, depth-1) + `{"a":` + leaf + `}` + strings.Repeat(`}`, depth-1)
}

func TestMaxInputDepth(t *testing.T) {
	c := newTestCompiler(t, Options{})
	e := mustCompile(t, c, `"fixed"`)
	// MaxInputDepthDefault levels of objects are fine; one more is not.
	if _, err := e.Key([]byte(nested(MaxInputDepthDefault, `"x"`)), nil); err != nil {
		t.Fatalf("depth %d: %v", MaxInputDepthDefault, err)
	}
	for _, in := range []string{
		nested(MaxInputDepthDefault+1, `"x"`),
		nested(MaxInputDepthDefault, `[1]`),
		`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	} {
		_, err := e.Key([]byte(in), nil)
		var ie *Error
		if !errors.As(err, &ie) || !strings.Contains(ie.Message, "64") || !strings.Contains(ie.Message, "deeper") {
			t.Fatalf("too deep: got %v, want an ErrInput *Error naming the limit", err)
		}
	}
	// Metadata is held to the same limit.
	if _, err := e.Key(nil, []byte(nested(MaxInputDepthDefault+1, `1`))); !errors.Is(err, ErrInput) {
		t.Fatalf("deep metadata: %v", err)
	}
	// Brackets inside strings, escaped quotes included, do not count.
	deepString := `{"s":"` + strings.Repeat(`{[\"`, 200) + `"}`
	if _, err := e.Key([]byte(deepString), nil); err != nil {
		t.Fatalf("brackets in strings: %v", err)
	}

	c = newTestCompiler(t, Options{MaxInputDepth: 2})
	e = mustCompile(t, c, `"fixed"`)
	if _, err := e.Key([]byte(`{"a":{"b":1}}`), nil); err != nil {
		t.Fatalf("depth 2 with limit 2: %v", err)
	}
	_, err := e.Key([]byte(`{"a":{"b":[]}}`), nil)
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "limit of 2") {
		t.Fatalf("depth 3 with limit 2: %v", err)
	}
}

func TestCostLimit(t *testing.T) {
	c := newTestCompiler(t, Options{})
	list := "[1,2,3,4,5,6,7,8,9,10]"
	exprs := []string{
		// Nested comprehensions: 10^4 elements built.
		list + `.map(a, ` + list + `.map(b, ` + list + `.map(c, ` + list + `.map(d, string(a+b+c+d)))))[0][0][0][0]`,
		// Repeated string doubling: 2^40 bytes if nothing stopped it.
		`input.s` + strings.Repeat(`.replace("a", "aa")`, 40),
		// Tenfold growth per step.
		`input.s` + strings.Repeat(`.replace("a", "aaaaaaaaaa")`, 12),
	}
	for _, expr := range exprs {
		e := mustCompile(t, c, expr)
		_, err := e.keyMap(map[string]any{"s": strings.Repeat("a", 10)}, nil)
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrCostLimit) {
			name := expr
			if len(name) > 60 {
				name = name[:60] + "..."
			}
			t.Fatalf("%s: got %v, want *Error", name, err)
		}
		if ce.Limit != CostLimitDefault || !strings.Contains(err.Error(), "10000") {
			t.Errorf("CostLimitError = %v", err)
		}
	}

	// The same expression passes under a higher limit.
	c = newTestCompiler(t, Options{CostLimit: 1_000_000})
	e := mustCompile(t, c, list+`.map(a, `+list+`.map(b, string(a+b)))[9][9]`)
	if got, err := e.keyMap(nil, nil); err != nil || got != "20" {
		t.Fatalf("Key = %q, %v", got, err)
	}
	// checksum is charged by length, so hashing a long string counts.
	c = newTestCompiler(t, Options{CostLimit: 100})
	e = mustCompile(t, c, `checksum(input.s)`)
	if _, err := e.keyMap(map[string]any{"s": strings.Repeat("x", 10_000)}, nil); !errors.Is(err, ErrCostLimit) {
		t.Fatalf("checksum of 10kB under limit 100: %v", err)
	}
}
