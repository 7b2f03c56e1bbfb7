package idempotency

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCompileError(t *testing.T) {
	c := newTestCompiler(t, Options{})
	tests := []struct {
		expr      string
		line, col int
		message   string // in CompileError.Message
	}{
		{`input.id +`, 1, 11, "Syntax error"},
		{`order.id`, 1, 1, "undeclared reference to 'order'"},
		{`"k:" + checksum(1)`, 1, 16, "found no matching overload for 'checksum'"},
		{"\"a\" +\n\tinput.id.nope(", 2, 16, "Syntax error"},
		{`input.name.lowerAscii(1)`, 1, 22, "found no matching overload for 'lowerAscii'"},
		{``, 1, 1, "Syntax error"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := c.Compile(tc.expr)
			if e != nil {
				t.Fatalf("Compile returned an expression")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %T %v, want *Error", err, err)
			}
			if !errors.Is(err, ErrCompile) {
				t.Errorf("errors.Is(err, ErrCompile) = false")
			}
			if ce.Expr != tc.expr || ce.Line != tc.line || ce.Column != tc.col {
				t.Errorf("CompileError = %+v, want line %d column %d", ce, tc.line, tc.col)
			}
			if !strings.Contains(ce.Message, tc.message) {
				t.Errorf("Message = %q, want it to contain %q", ce.Message, tc.message)
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprintf("%q", tc.expr)) || !strings.Contains(msg, fmt.Sprintf("%d:%d", tc.line, tc.col)) ||
				!strings.Contains(msg, tc.message) {
				t.Errorf("Error() = %q, want the expression, position and message", msg)
			}
		})
	}
}

func TestCompileErrorWithoutPosition(t *testing.T) {
	if got := (&Error{Kind: ErrCompile, Expr: "x", Message: "m"}).Error(); got != `idempotency: compiling "x": m` {
		t.Errorf("Error() = %q", got)
	}
}

func TestErrorMessagesQuoteLongExpressionsBriefly(t *testing.T) {
	long := `"` + strings.Repeat("é", 500) + `"`
	msg := (&Error{Kind: ErrEmptyKey, Expr: long}).Error()
	if len(msg) > 500 || !strings.HasSuffix(msg, `..." evaluated to an empty string`) && !strings.Contains(msg, `"...`) {
		t.Errorf("Error() = %q, want the expression abbreviated", msg)
	}
	if !strings.Contains(msg, "é") || strings.Contains(msg, "\\x") {
		t.Errorf("abbreviation split a character: %q", msg)
	}
}

func TestEvalErrors(t *testing.T) {
	c := newTestCompiler(t, Options{MaxKeyLength: 16})
	input := map[string]any{
		"id":    "abc",
		"n":     float64(3),
		"ok":    true,
		"nil":   nil,
		"obj":   map[string]any{"id": "x"},
		"list":  []any{"a"},
		"empty": "",
		"long":  strings.Repeat("x", 17),
		"max":   strings.Repeat("x", 16),
		"order": map[string]any{"lines": []any{}},
	}
	meta := map[string]any{"tenant": "acme"}

	type check func(t *testing.T, err error)
	typeErr := func(typ string) check {
		return func(t *testing.T, err error) {
			var te *Error
			if !errors.As(err, &te) || !errors.Is(err, ErrNotString) {
				t.Fatalf("err = %T %v, want *Error", err, err)
			}
			if te.Type != typ || !strings.Contains(err.Error(), typ) {
				t.Errorf("ResultTypeError = %v, want type %s", err, typ)
			}
		}
	}
	evalErr := func(field, message string) check {
		return func(t *testing.T, err error) {
			var ee *Error
			if !errors.As(err, &ee) || !errors.Is(err, ErrEval) {
				t.Fatalf("err = %T %v, want *Error", err, err)
			}
			if ee.Field != field || ee.Message != message {
				t.Errorf("EvalError = %+v, want field %q message %q", ee, field, message)
			}
			if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), message) {
				t.Errorf("Error() = %q, want field and message", err)
			}
		}
	}
	empty := func(t *testing.T, err error) {
		var ke *Error
		if !errors.As(err, &ke) || !errors.Is(err, ErrEmptyKey) {
			t.Fatalf("err = %T %v, want *Error", err, err)
		}
	}
	tooLong := func(length int) check {
		return func(t *testing.T, err error) {
			var ke *Error
			if !errors.As(err, &ke) || !errors.Is(err, ErrKeyTooLong) {
				t.Fatalf("err = %T %v, want *Error", err, err)
			}
			if ke.Size != uint64(length) || ke.Limit != 16 || !strings.Contains(err.Error(), "16") {
				t.Errorf("key too long: %v", err)
			}
		}
	}

	tests := []struct {
		expr  string
		check check
	}{
		{`input.n`, typeErr("double")},
		{`input.ok`, typeErr("bool")},
		{`input.nil`, typeErr("null_type")},
		{`input.obj`, typeErr("map")},
		{`input.list`, typeErr("list")},
		{`input`, typeErr("map")},
		{`size(input.id)`, typeErr("int")},
		{`1u`, typeErr("uint")},
		{`b"x"`, typeErr("bytes")},
		{`input.id == "abc"`, typeErr("bool")},
		{`input.missing`, evalErr("input.missing", "no such key: missing")},
		{`input.obj.missing`, evalErr("input.obj.missing", "no such key: missing")},
		{`input.nope.id`, evalErr("input.nope", "no such key: nope")},
		{`input.id.x`, evalErr("input.id.x", "no such key: x")},
		{`input.list.x`, evalErr("input.list.x", "unsupported index type 'string' in list")},
		{`input["bad key"]`, evalErr(`input["bad key"]`, "no such key: bad key")},
		{`additional_metadata.user`, evalErr("additional_metadata.user", "no such key: user")},
		{`"k:" + input.missing`, evalErr("input.missing", "no such key: missing")},
		{`input.id + additional_metadata.nope.deeper`, evalErr("additional_metadata.nope", "no such key: nope")},
		{`input.obj.id + input.obj.zz`, evalErr("input.obj.zz", "no such key: zz")},
		{`input.order.lines[0]`, evalErr("", "index out of bounds: 0")},
		{`input.id + input.n`, evalErr("", "no such overload")},
		{`input.empty`, empty},
		{`"" + input.empty`, empty},
		{`input.long`, tooLong(17)},
		{`input.max + "y"`, tooLong(17)},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e := mustCompile(t, c, tc.expr)
			key, err := e.keyMap(input, meta)
			if key != "" {
				t.Errorf("key = %q alongside error", key)
			}
			tc.check(t, err)
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.expr)) {
				t.Errorf("Error() = %q does not name the expression", err)
			}
		})
	}
	if got, err := mustCompile(t, c, `input.max`).keyMap(input, meta); err != nil || got != input["max"] {
		t.Errorf("key at the limit: %q, %v", got, err)
	}
}

// Each error matches its own sentinel and no other.
func TestSentinelsAreDistinct(t *testing.T) {
	errs := map[error]error{
		&Error{Kind: ErrCompile, Expr: "x"}:    ErrCompile,
		&Error{Kind: ErrNotString, Expr: "x"}:  ErrNotString,
		&Error{Kind: ErrEmptyKey, Expr: "x"}:   ErrEmptyKey,
		&Error{Kind: ErrKeyTooLong, Expr: "x"}: ErrKeyTooLong,
		&Error{Kind: ErrEval, Expr: "x"}:       ErrEval,
		&Error{Kind: ErrCostLimit, Expr: "x"}:  ErrCostLimit,
		&Error{Kind: ErrInput, Message: "x"}:   ErrInput,
	}
	for err, own := range errs {
		for _, sentinel := range errs {
			wrapped := fmt.Errorf("trigger: %w", err)
			if got := errors.Is(wrapped, sentinel); got != (sentinel == own) {
				t.Errorf("errors.Is(%v, %v) = %v", err, sentinel, got)
			}
		}
		if !strings.HasPrefix(err.Error(), "idempotency: ") {
			t.Errorf("Error() = %q", err)
		}
	}
}
