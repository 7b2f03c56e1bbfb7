package main

import (
	"context"
	"strings"
	"testing"
)

// eval needs no Redis for an expression given on the command line; its
// errors show the expression with a caret under the problem.
func TestEvalGolden(t *testing.T) {
	t.Parallel()
	n := &normalizer{}
	cases := []gcase{
		{name: "eval_ok", args: []string{"eval", `"order:" + input.orderId`, "--input", `{"orderId":"1001"}`}},
		{name: "eval_meta.json", args: []string{"eval", `additional_metadata.tenant + ":" + input.id`, "--input", `{"id":"7"}`, "--meta", "tenant=acme", "-o", "json"}},
		{name: "eval_checksum", args: []string{"eval", `checksum(input.email.lowerAscii())`, "--input", "-"}, stdin: `{"email":"Ada@Example.com"}`},
		{name: "eval_syntax_error", args: []string{"eval", `"order:" + input.orderId +`, "--input", `{"orderId":"1001"}`}, code: exitFailure},
		{name: "eval_syntax_error.json", args: []string{"eval", `"order:" + input.orderId +`, "-o", "json"}, code: exitFailure},
		{name: "eval_type_error", args: []string{"eval", `"order:" + 1`}, code: exitFailure},
		{name: "eval_not_string", args: []string{"eval", `input.amount`, "--input", `{"amount":12}`}, code: exitFailure},
		{name: "eval_not_string.json", args: []string{"eval", `input.amount`, "--input", `{"amount":12}`, "-o", "json"}, code: exitFailure},
		{name: "eval_missing_field", args: []string{"eval", `"order:" + input.customer.id`, "--input", `{"customer":{"name":"Ada"}}`}, code: exitFailure},
		{name: "eval_missing_field.json", args: []string{"eval", `"order:" + input.customer.id`, "--input", `{"customer":{}}`, "-o", "json"}, code: exitFailure},
		{name: "eval_missing_meta", args: []string{"eval", "input.id + \":\" +\n  additional_metadata.tenant", "--input", `{"id":"7"}`}, code: exitFailure},
		{name: "eval_no_overload", args: []string{"eval", `"order:" + input.orderId`, "--input", `{"orderId":1001}`}, code: exitFailure},
		{name: "eval_empty_key", args: []string{"eval", `input.id`, "--input", `{"id":""}`}, code: exitFailure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(context.Background(), invocation{stdin: strings.NewReader(tc.stdin)}, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			golden(t, tc.name, n.render(r))
		})
	}
}

// The three failures the issue names, checked for their substance as well
// as against the golden files: where the caret points and what is said.
func TestEvalErrorsPointAtTheProblem(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		msg  string
		// caret is the expected pair of lines under the message.
		caret string
	}{
		{"syntax error", []string{"eval", `input.id +`}, "invalid expression at line 1, column 11",
			"  input.id +\n            ^"},
		{"non-string result", []string{"eval", `input.amount`, "--input", `{"amount":12}`}, "evaluated to a value of type double; a key must be a string",
			"  input.amount\n  ^~~~~~~~~~~~"},
		{"missing field", []string{"eval", `"order:" + input.customer.id`, "--input", `{"customer":{}}`}, "cannot read input.customer.id",
			`  "order:" + input.customer.id` + "\n             ^~~~~~~~~~~~~~~~~"},
		// CEL names no place for a type mismatch found at run time.
		{"no matching overload", []string{"eval", `"order:" + input.orderId`, "--input", `{"orderId":1001}`}, "evaluation failed: no such overload",
			`  "order:" + input.orderId` + "\n  ^~~~~~~~~~~~~~~~~~~~~~~~"},
		{"key too long", []string{"eval", `"k:" + input.s`, "--input", `{"s":"` + strings.Repeat("s", 511) + `"}`},
			"the key is 513 bytes, over the limit of 512", `  "k:" + input.s` + "\n  ^~~~~~~~~~~~~~"},
		// Refused before running: the function and the limit are named.
		{"function over the cost limit", []string{"eval", `input.a.replace("", input.a)`, "--input", `{"a":"` + strings.Repeat("a", 300) + `"}`},
			"replace would cost 90631, over the cost limit of 10000; evaluation stopped before it",
			`  input.a.replace("", input.a)` + "\n  ^~~~~~~~~~~~~~~~~~~~~~~~~~~~"},
		{"string over the size limit", []string{"eval", `input.a + input.a`, "--input", `{"a":"` + strings.Repeat("a", 40000) + `"}`},
			"+ would build a string of 80000 bytes, over the limit of 65536; evaluation stopped before it",
			"  input.a + input.a\n  ^~~~~~~~~~~~~~~~~"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(context.Background(), invocation{}, tc.args...)
			if r.code != exitFailure {
				t.Fatalf("exit %d, want %d", r.code, exitFailure)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing: no key was derived", r.stdout)
			}
			if !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("stderr %q does not say %q", r.stderr, tc.msg)
			}
			if !strings.Contains(r.stderr, tc.caret+"\n") {
				t.Errorf("stderr does not point at the problem:\n%s\nwant:\n%s", r.stderr, tc.caret)
			}
		})
	}
}
