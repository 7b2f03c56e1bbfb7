// Package otel stands in for go.opentelemetry.io/otel: the signatures the
// tracing example in docs/operations.md uses, as OpenTelemetry declares
// them, and nothing behind them.
package otel

import "go.opentelemetry.io/otel/trace"

// Tracer is otel.Tracer.
func Tracer(name string, opts ...trace.TracerOption) trace.Tracer { return nil }
