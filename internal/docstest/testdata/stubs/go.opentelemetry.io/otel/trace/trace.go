// Package trace stands in for go.opentelemetry.io/otel/trace.
package trace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// TracerOption is trace.TracerOption.
type TracerOption interface{ tracerOption() }

// SpanStartOption is trace.SpanStartOption.
type SpanStartOption interface{ spanStartOption() }

// SpanStartEventOption is trace.SpanStartEventOption.
type SpanStartEventOption interface {
	SpanStartOption
	eventOption()
}

// EventOption is trace.EventOption.
type EventOption interface{ eventOption() }

// SpanEndOption is trace.SpanEndOption.
type SpanEndOption interface{ spanEndOption() }

// SpanKind is trace.SpanKind.
type SpanKind int

// The span kinds.
const (
	SpanKindUnspecified SpanKind = 0
	SpanKindInternal    SpanKind = 1
	SpanKindServer      SpanKind = 2
	SpanKindClient      SpanKind = 3
	SpanKindProducer    SpanKind = 4
	SpanKindConsumer    SpanKind = 5
)

type option struct{}

func (option) spanStartOption() {}
func (option) eventOption()     {}

// WithSpanKind is trace.WithSpanKind.
func WithSpanKind(kind SpanKind) SpanStartOption { return option{} }

// WithAttributes is trace.WithAttributes.
func WithAttributes(attributes ...attribute.KeyValue) SpanStartEventOption { return option{} }

// Span is trace.Span (in part).
type Span interface {
	End(options ...SpanEndOption)
	RecordError(err error, options ...EventOption)
	SetStatus(code codes.Code, description string)
	SetAttributes(kv ...attribute.KeyValue)
}

// Tracer is trace.Tracer.
type Tracer interface {
	Start(ctx context.Context, spanName string, opts ...SpanStartOption) (context.Context, Span)
}
