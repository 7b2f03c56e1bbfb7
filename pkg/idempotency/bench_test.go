package idempotency

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// BenchmarkKey compares Expression.Key ("taskq") with a plain cel-go
// Program.Eval of the same expression on the same input ("celgo"), built from
// the same environment and program options, cost limit included, so the
// difference is what this package adds or saves. "celgo-nolimit" is the same
// program without the cost limit.
func BenchmarkKey(b *testing.B) {
	input := map[string]any{
		"id":    "3b1f0c2e-7a0d-4d8e-9a57-6f0e8f1c2d3a",
		"a":     "customer-42",
		"b":     "invoice-2024-0001",
		"order": map[string]any{"id": "ord_123", "total": 99.5},
	}
	meta := map[string]any{"tenant": "acme"}
	cases := []struct {
		name string
		expr string
		want string
	}{
		{"field", `input.id`, "3b1f0c2e-7a0d-4d8e-9a57-6f0e8f1c2d3a"},
		{"concat", `"order:" + input.id + ":" + additional_metadata.tenant`, "order:3b1f0c2e-7a0d-4d8e-9a57-6f0e8f1c2d3a:acme"},
		{"checksum", `checksum(input.a + input.b)`, sha256Hex("customer-42invoice-2024-0001")},
	}
	c, err := NewCompiler(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			e, err := c.Compile(tc.expr)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("taskq", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					key, err := e.keyMap(input, meta)
					if err != nil || key != tc.want {
						b.Fatalf("Key = %q, %v", key, err)
					}
				}
			})
			celgo := func(opts []cel.ProgramOption) func(b *testing.B) {
				return func(b *testing.B) {
					checked, iss := c.env.Compile(tc.expr)
					if iss.Err() != nil {
						b.Fatal(iss.Err())
					}
					prg, err := c.env.Program(checked, opts...)
					if err != nil {
						b.Fatal(err)
					}
					vars := map[string]any{"input": input, "additional_metadata": meta}
					b.ReportAllocs()
					for b.Loop() {
						out, _, err := prg.Eval(vars)
						if err != nil || out.(types.String) != types.String(tc.want) {
							b.Fatalf("Eval = %v, %v", out, err)
						}
					}
				}
			}
			b.Run("celgo", celgo(programOptions(c.limits)))
			// The same without a cost limit, which cel-go enforces by
			// observing every step of the evaluation.
			b.Run("celgo-nolimit", celgo(untrackedProgramOptions(c.limits)))
		})
	}
}
