package main

import (
	"errors"
	"testing"

	"github.com/taskq/taskq/pkg/idempotency"
)

// A compile error's caret sits under the column of the problem, tabs kept
// so that it lines up however a terminal expands them; none without a
// position.
func TestCaretUnderTheCompileError(t *testing.T) {
	c, err := idempotency.NewCompiler(idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ expr, caret string }{
		{`input.id +`, "input.id +\n          ^"},
		{`order.id`, "order.id\n^"},
		{`"k:" + checksum(1)`, "\"k:\" + checksum(1)\n               ^"},
		{"\"a\" +\n\tinput.id.nope(", "\tinput.id.nope(\n\t              ^"},
		{`input.name.lowerAscii(1)`, "input.name.lowerAscii(1)\n                     ^"},
		{``, "\n^"},
	} {
		_, err := c.Compile(tc.expr)
		var ie *idempotency.Error
		if !errors.As(err, &ie) {
			t.Fatalf("Compile(%q) = %v, want an *idempotency.Error", tc.expr, err)
		}
		if got := caret(ie); got != tc.caret {
			t.Errorf("caret of %q =\n%s\nwant\n%s", tc.expr, got, tc.caret)
		}
	}
	for _, ie := range []*idempotency.Error{
		{Expr: "x", Message: "m"},
		{Expr: "x", Line: 3, Column: 1},
	} {
		if got := caret(ie); got != "" {
			t.Errorf("caret of %+v = %q, want empty", ie, got)
		}
	}
}
