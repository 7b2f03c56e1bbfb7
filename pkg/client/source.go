package client

import "github.com/taskq/taskq/internal/engine"

// The sources taskq's own entry points name their triggers with; a
// trigger without WithSource is SourceClient's. An event's runs record
// "event:<event id>".
const (
	SourceClient = engine.SourceClient
	SourceHTTP   = engine.SourceHTTP
	SourceCLI    = engine.SourceCLI
)

// ErrInvalidSource matches the error of a trigger whose WithSource holds a
// space, a character that is not printable ASCII, or more than 64 bytes.
var ErrInvalidSource = engine.ErrInvalidSource

// WithSource names where the trigger comes from ("cron", "billing-api"):
// when it creates no run because another run holds its key, the record of
// the suppressed trigger says so (Inspector.ListSuppressed). The HTTP API
// names its triggers SourceHTTP and the command line SourceCLI; the
// default is SourceClient.
func WithSource(source string) RunOption {
	return func(o *runOptions) { o.source = source }
}
