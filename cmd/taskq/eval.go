package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/idempotency"
)

// exprError is a key expression that failed to compile or evaluate, with
// the expression shown and a caret under the problem where it is known.
type exprError struct {
	err    error
	kind   string // compile, result_type, empty_key, key_too_long, eval, cost_limit, size_limit, input
	msg    string
	detail string
	line   int
	column int
	field  string
}

func (e *exprError) Error() string  { return e.msg }
func (e *exprError) Unwrap() error  { return e.err }
func (e *exprError) Detail() string { return e.detail }

// body is the JSON of an expression error: the HTTP API's error body
// with code idempotency_key_error.
func (e *exprError) body() wire.Error {
	return wire.Error{Code: wire.CodeIdempotencyKeyError, Message: e.msg, Kind: e.kind,
		Line: e.line, Column: e.column, Field: e.field}
}

// evalFailure turns an *idempotency.Error into an
// exprError for display; other errors are returned as they are.
func evalFailure(expr string, err error) error {
	var ie *idempotency.Error
	if !errors.As(err, &ie) {
		return err
	}
	e := &exprError{err: err}
	switch {
	case errors.Is(ie.Kind, idempotency.ErrCompile):
		if ie.Line > 0 {
			e.msg = fmt.Sprintf("invalid expression at line %d, column %d: %s", ie.Line, ie.Column, ie.Message)
		} else {
			e.msg = "invalid expression: " + ie.Message
		}
		e.detail = indent(caret(ie))
	case errors.Is(ie.Kind, idempotency.ErrNotString):
		e.msg = fmt.Sprintf("the expression evaluated to a value of type %s; a key must be a string", ie.Type)
		e.detail = underline(expr, 0, len(expr))
	case errors.Is(ie.Kind, idempotency.ErrEmptyKey):
		e.msg = "the expression evaluated to an empty string; a key must not be empty"
		e.detail = underline(expr, 0, len(expr))
	case errors.Is(ie.Kind, idempotency.ErrKeyTooLong):
		e.msg = fmt.Sprintf("the key is %d bytes, over the limit of %d", ie.Size, ie.Limit)
	case errors.Is(ie.Kind, idempotency.ErrCostLimit):
		if ie.Function != "" {
			e.msg = fmt.Sprintf("%s would cost %d, over the cost limit of %d; evaluation stopped before it", ie.Function, ie.Size, ie.Limit)
		} else {
			e.msg = fmt.Sprintf("evaluation stopped at the cost limit of %d", ie.Limit)
		}
	case errors.Is(ie.Kind, idempotency.ErrSizeLimit):
		what := "a string"
		if ie.Unit == idempotency.UnitElements {
			what = "a list"
		}
		e.msg = fmt.Sprintf("%s would build %s of %d %s, over the limit of %d; evaluation stopped before it", ie.Function, what, ie.Size, ie.Unit, ie.Limit)
	case errors.Is(ie.Kind, idempotency.ErrInput):
		e.msg = "invalid input: " + ie.Message
	default: // ErrEval
		if ie.Field != "" {
			e.msg = fmt.Sprintf("cannot read %s: %s", ie.Field, ie.Message)
			if at := strings.Index(expr, ie.Field); at >= 0 {
				e.detail = underline(expr, at, len(ie.Field))
			}
		} else {
			e.msg = "evaluation failed: " + ie.Message
		}
	}
	// What failed and where, named as the HTTP API's 422 names it.
	k, _ := wire.KeyErrorKind(err)
	e.kind, e.line, e.column, e.field = k.Kind, k.Line, k.Column, k.Field
	if e.detail == "" && e.kind != "input" {
		// No place in the expression is known: show all of it, so that a
		// trigger of a registered task says which expression failed.
		e.detail = underline(expr, 0, len(expr))
	}
	return e
}

// caret renders the offending line of a compile error's expression with a
// '^' under the column of the problem, for display in a terminal. It
// returns "" when the position is unknown.
func caret(e *idempotency.Error) string {
	if e.Line < 1 || e.Column < 1 {
		return ""
	}
	lines := strings.Split(e.Expr, "\n")
	if e.Line > len(lines) {
		return ""
	}
	line := strings.TrimSuffix(lines[e.Line-1], "\r")
	var pad strings.Builder
	col := 1
	for _, r := range line {
		if col >= e.Column {
			break
		}
		// Tabs stay tabs so the caret lines up however the terminal expands them.
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
		col++
	}
	// A column past the end of the line (an unexpected end of input) gets
	// its caret just after the last character.
	return line + "\n" + pad.String() + "^"
}

// underline shows the line of expr holding byte offset at, with a caret
// and tildes under n bytes of it.
func underline(expr string, at, n int) string {
	if expr == "" {
		return ""
	}
	start := strings.LastIndexByte(expr[:at], '\n') + 1
	end := strings.IndexByte(expr[at:], '\n')
	if end < 0 {
		end = len(expr)
	} else {
		end += at
	}
	line := expr[start:end]
	var pad strings.Builder
	for _, r := range expr[start:at] {
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	if at+n > end {
		n = end - at
	}
	width := len([]rune(expr[at : at+n]))
	if width < 1 {
		width = 1
	}
	return indent(line + "\n" + pad.String() + "^" + strings.Repeat("~", width-1))
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// evalView is eval's output.
type evalView struct {
	Key        string `json:"key"`
	Expression string `json:"expression"`
	Task       string `json:"task,omitempty"`
	Strategy   string `json:"strategy,omitempty"`
}

func (a *app) evalCmd() *cobra.Command {
	var input, metaJSON, taskName string
	var meta []string
	cmd := &cobra.Command{
		Use:   "eval [EXPR]",
		Short: "Evaluate an idempotency key expression offline, as a trigger would",
		Long: `Evaluate a CEL key expression against an input and metadata exactly as a
trigger would, and print the key. A syntax or type error, a result that is not
a non-empty string, or a field the input lacks is printed with a caret under
its position, and the command exits with code 1. Nothing is written to Redis.

With --task, the expression registered by the task's workers is used (this
reads the task registry in Redis).`,
		Example: `  taskq eval '"order:" + input.orderId' --input '{"orderId":"1001"}'
  taskq eval 'additional_metadata.tenant + ":" + input.id' --input '{"id":"7"}' --meta tenant=acme
  taskq eval 'checksum(input.email.lowerAscii())' --input @customer.json
  taskq eval --task process-order --input '{"orderId":"1001"}'`,
		Args: argNames(nil, "EXPR"),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && taskName != "":
				return usageErrorf("give either an expression or --task, not both")
			case len(args) == 0 && taskName == "":
				return usageErrorf("missing expression: give EXPR or --task NAME")
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, err := readObject("--input", input, a.stdin)
			if err != nil {
				return err
			}
			md, err := metadata(meta, metaJSON, a.stdin)
			if err != nil {
				return err
			}
			v := evalView{}
			var key string
			if taskName != "" {
				c, err := a.client(ctx)
				if err != nil {
					return err
				}
				def, err := c.Definition(ctx, taskName)
				if err != nil {
					return err
				}
				if def.Idempotency == nil {
					return fmt.Errorf("task %q has no key expression: its triggers are not deduplicated", taskName)
				}
				v.Task, v.Expression, v.Strategy = taskName, def.Idempotency.Expression, string(def.Idempotency.Strategy)
				key, err = def.Key(in, md)
				if err != nil {
					return a.exprFailed(v.Expression, err)
				}
			} else {
				v.Expression = args[0]
				// A compiler with default options, as the client uses: the
				// same limits, the same result.
				comp, err := idempotency.NewCompiler(idempotency.Options{})
				if err != nil {
					return err
				}
				expr, err := comp.Compile(v.Expression)
				if err != nil {
					return a.exprFailed(v.Expression, err)
				}
				if key, err = expr.Key(in, md); err != nil {
					return a.exprFailed(v.Expression, err)
				}
			}
			v.Key = key
			p := a.printer()
			if p.json() {
				return p.JSON(v)
			}
			// -o json gives the exact bytes of a key that does not print.
			_, err = fmt.Fprintln(a.stdout, clean(key))
			return err
		}),
	}
	cmd.Flags().StringVar(&input, "input", "{}", "run input: JSON object, @file or - for stdin")
	cmd.Flags().StringArrayVar(&meta, "meta", nil, "additional metadata key=value (repeatable; values are strings)")
	cmd.Flags().StringVar(&metaJSON, "meta-json", "", "additional metadata as a JSON object, @file or -")
	cmd.Flags().StringVar(&taskName, "task", "", "use the key expression registered for this task")
	_ = cmd.RegisterFlagCompletionFunc("task", a.completeTasks)
	return cmd
}

// exprFailed reports an expression error; with -o json it is also printed
// as an object on stdout, for tools that check expressions.
func (a *app) exprFailed(expr string, err error) error {
	err = evalFailure(expr, err)
	var ee *exprError
	if p := a.printer(); p.json() && errors.As(err, &ee) {
		if perr := p.JSON(ee.body()); perr != nil {
			return perr
		}
	}
	return err
}
