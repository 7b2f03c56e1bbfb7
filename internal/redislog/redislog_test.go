package redislog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func jsonLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: level}))
}

// The newest logger that takes warnings gets the line; releasing it hands
// the lines back to the one before; a logger that takes no warnings is
// passed over.
func TestLinesGoToTheNewestLoggerThatTakesWarnings(t *testing.T) {
	var first, second, quiet bytes.Buffer
	releaseFirst := Route(jsonLogger(&first, slog.LevelInfo))
	defer releaseFirst()
	releaseSecond := Route(jsonLogger(&second, slog.LevelInfo))
	releaseQuiet := Route(jsonLogger(&quiet, slog.LevelError))
	defer releaseQuiet()

	adapter{}.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 5, "refused")
	if first.Len() != 0 || quiet.Len() != 0 {
		t.Fatalf("older or quiet logger got the line: %q %q", first.String(), quiet.String())
	}
	var rec map[string]any
	if err := json.Unmarshal(second.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %q", second.String())
	}
	if rec["level"] != "WARN" || rec["component"] != Component ||
		rec["msg"] != "go-redis: connection pool: failed to dial after 5 attempts: refused" {
		t.Errorf("record %v", rec)
	}
	if src, _ := rec["source"].(string); !strings.HasSuffix(src, ".go:"+strings.Split(src, ":")[1]) {
		t.Errorf("source %q is not file:line", src)
	}

	releaseSecond()
	releaseSecond() // twice is safe
	adapter{}.Printf(context.Background(), "redis: again")
	if !strings.Contains(first.String(), `"msg":"go-redis: again"`) {
		t.Errorf("after the newest was released, the one before did not get the line: %q", first.String())
	}
}
