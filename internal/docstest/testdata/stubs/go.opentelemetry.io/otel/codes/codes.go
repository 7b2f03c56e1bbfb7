// Package codes stands in for go.opentelemetry.io/otel/codes.
package codes

// Code is codes.Code.
type Code uint32

// The status codes.
const (
	Unset Code = 0
	Error Code = 1
	Ok    Code = 2
)
