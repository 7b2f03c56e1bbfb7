package main

import (
	"log/slog"

	"github.com/spf13/pflag"
)

// Log formats of --log-format.
const (
	logText = "text"
	logJSON = "json"
)

// logFormatFlag defines --log-format on fs.
func logFormatFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "log-format", logText, "format of the logs on stderr: text, or json (one object a line, for log collectors)")
}

func checkLogFormat(format string) error {
	if format != logText && format != logJSON {
		return usageErrorf("invalid --log-format %q: use text or json", format)
	}
	return nil
}

// newLog is the logger of a long-running command (serve, dev): records at
// level and above on stderr, in format, passwords hidden (see logOptions).
func (a *app) newLog(format string, level slog.Level) *slog.Logger {
	if format == logJSON {
		return slog.New(slog.NewJSONHandler(a.stderr, a.logOptions(level)))
	}
	return slog.New(slog.NewTextHandler(a.stderr, a.logOptions(level)))
}
