package idempotency

import (
	"reflect"
	"strings"
	"testing"
)

// assertKeyJSONAsDecoded checks that Key gives exactly the key or error
// that decoding the JSON and calling Key gives.
func assertKeyJSONAsDecoded(t *testing.T, e *Expression, input, meta string) {
	t.Helper()
	gotKey, gotErr := e.Key([]byte(input), []byte(meta))
	wantKey, wantErr := e.keyDecoded([]byte(input), []byte(meta))
	if gotKey != wantKey || !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%s on input %q meta %q:\nKeyJSON: %q, %T %v\ndecoded: %q, %T %v",
			e.src, input, meta, gotKey, gotErr, gotErr, wantKey, wantErr, wantErr)
	}
}

func TestKeyJSONMatchesDecodedKey(t *testing.T) {
	c := newTestCompiler(t, Options{MaxKeyLength: 8, MaxInputDepth: 4})
	exprs := []string{
		`input.id`,
		`input.a.b`,
		`input["a b"]`,
		`input["é"]`,
		`input["\ufffd"]`,
		`additional_metadata.tenant`,
		`additional_metadata.a.b`,
	}
	docs := []string{
		``, `  `, `{}`, ` { } `, "\t{\n}\r\n", `[]`, `"s"`, `1`, `null`, `{`, `{"id":}`, `{"id":"x"} x`,
		`{"id":"x"}`, `{"id":""}`, `{"id":"123456789"}`, `{"id":"€€€"}`, `{"id":"a\"b"}`, `{"id":"\u0041"}`,
		`{"id":"a\\b"}`, "{\"id\":\"\xff\"}", "{\"id\":\"\xe2\x82\"}", `{"id":1}`, `{"id":-0.5}`, `{"id":true}`,
		`{"id":false}`, `{"id":null}`, `{"id":{}}`, `{"id":[]}`, `{"id":[1,"}"]}`, `{"id":"x","id":"y"}`,
		`{"id":"x","id":1}`, `{"id":1,"id":"x"}`, `{"\u0069d":"esc"}`, `{"id":"x","\u0069d":"esc"}`,
		"{\"\xffid\":\"bad\"}", "{\"\xff\":\"bad\"}", `{"ID":"case"}`, `{"i d":"x"}`, `{ "id" : "sp" , "z" : 1 }`,
		`{"n":1e400,"id":"x"}`, `{"n":-1e400,"id":"x"}`, `{"n":1e-400,"id":"x"}`, `{"n":1E5,"id":"x"}`,
		`{"n":1234567890123456789012345,"id":"x"}`, `{"n":"1e400","id":"x"}`,
		`{"n":1` + strings.Repeat("0", 400) + `,"id":"x"}`,
		`{"a":{"b":"in"}}`, `{"a":{"b":"in","b":"last"}}`, `{"a":{"b":{}}}`, `{"a":{"b":2}}`, `{"a":{}}`,
		`{"a":[]}`, `{"a":"s"}`, `{"a":null}`, `{"a":1}`, `{"a":{"x":{"b":"no"}}}`, `{"a":{"b":"}"}}`,
		`{"a":{"c":"\"","b":"q"}}`, `{"a b":"sp"}`, `{"é":"acc"}`, `{"\ufffd":"r"}`, "{\"\xff\":\"r\"}",
		`{"tenant":"acme"}`, `{"tenant":["acme"]}`, `{"a":{"a":{"a":{"a":{}}}}}`, `{"a":{"a":{"a":{"a":{"a":{}}}}}}`,
		`{"x":[[[[["deep"]]]]]}`, `{"id":"x","x":[{"id":"inner"}]}`, `{"x":{"id":"inner"}}`,
	}
	for _, expr := range exprs {
		e := mustCompile(t, c, expr)
		if e.fast == nil {
			t.Fatalf("%s: no fast path", expr)
		}
		for _, d := range docs {
			assertKeyJSONAsDecoded(t, e, d, `{}`)
			assertKeyJSONAsDecoded(t, e, d, ``)
			assertKeyJSONAsDecoded(t, e, `{"id":"i"}`, d)
			assertKeyJSONAsDecoded(t, e, d, d)
		}
	}
}

// Key of a field path allocates no more than the key it returns.
func TestKeyJSONFieldPathAllocations(t *testing.T) {
	c := newTestCompiler(t, Options{})
	e := mustCompile(t, c, `input.id`)
	input, meta := []byte(`{"id":"order-123","n":2.5,"tags":["a","b"]}`), []byte(`{}`)
	if n := allocsPerRun(100, func() { _, _ = e.Key(input, meta) }); n > 1 {
		t.Fatalf("Key allocated %v times per call, want at most 1", n)
	}
}
