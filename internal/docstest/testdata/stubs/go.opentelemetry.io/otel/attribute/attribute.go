// Package attribute stands in for go.opentelemetry.io/otel/attribute.
package attribute

// Key is attribute.Key.
type Key string

// KeyValue is attribute.KeyValue.
type KeyValue struct {
	Key Key
}

// String is attribute.String.
func String(k, v string) KeyValue { return KeyValue{Key: Key(k)} }

// Int is attribute.Int.
func Int(k string, v int) KeyValue { return KeyValue{Key: Key(k)} }
