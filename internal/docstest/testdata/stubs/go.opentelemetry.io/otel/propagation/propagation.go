// Package propagation stands in for go.opentelemetry.io/otel/propagation.
package propagation

import "context"

// TextMapCarrier is propagation.TextMapCarrier.
type TextMapCarrier interface {
	Get(key string) string
	Set(key string, value string)
	Keys() []string
}

// MapCarrier is propagation.MapCarrier.
type MapCarrier map[string]string

// Get returns the value of key.
func (c MapCarrier) Get(key string) string { return c[key] }

// Set sets key to value.
func (c MapCarrier) Set(key, value string) { c[key] = value }

// Keys lists the keys.
func (c MapCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// TraceContext is propagation.TraceContext.
type TraceContext struct{}

// Inject is TraceContext.Inject.
func (TraceContext) Inject(ctx context.Context, carrier TextMapCarrier) {}

// Extract is TraceContext.Extract.
func (TraceContext) Extract(ctx context.Context, carrier TextMapCarrier) context.Context { return ctx }
