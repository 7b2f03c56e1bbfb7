package redistest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redislog"
)

// go-redis logs on its own, through one logger for the whole process
// (redis.SetLogger): every failed dial, a certificate it cannot verify, a
// pool error. Fault tests cause these on purpose, so on stderr they would
// bury a green run's output. The harness routes them into the test log
// instead: lines are kept in memory, out of a passing test's output, and a
// test that fails gets the lines logged while it ran in its own log. The
// logger is process-wide, so tests running in parallel with it may have
// added lines too.

// keptLines bounds the lines kept.
const keptLines = 2000

type logLine struct {
	at   time.Time
	text string
}

// libraryLog is go-redis's logger during tests: a ring of recent lines.
type libraryLog struct {
	mu    sync.Mutex
	lines []logLine
	next  int // where the next line goes once the ring is full
}

// Printf keeps one line.
func (l *libraryLog) Printf(_ context.Context, format string, v ...any) {
	line := logLine{at: time.Now(), text: fmt.Sprintf(format, v...)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < keptLines {
		l.lines = append(l.lines, line)
		return
	}
	l.lines[l.next] = line
	l.next = (l.next + 1) % keptLines
}

// since returns the lines kept that were logged at or after t, oldest
// first.
func (l *libraryLog) since(t time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i := range l.lines {
		line := l.lines[(l.next+i)%len(l.lines)]
		if !line.at.Before(t) {
			out = append(out, line.text)
		}
	}
	return out
}

var (
	libLogOnce sync.Once
	libLog     = &libraryLog{}
	// captured holds the tests already capturing, so a test that calls
	// Real twice prints the lines once.
	captured sync.Map
)

// installLibLog makes libLog go-redis's logger, once; taskq's clients and
// workers leave it in place.
func installLibLog() {
	libLogOnce.Do(func() {
		redislog.Leave()
		redis.SetLogger(libLog)
	})
}

// CaptureLibraryLog routes go-redis's log into the test log: nothing while
// the test passes, the lines logged while it ran (by any goroutine of the
// process) when it fails. Real, Mini and StartServer call it; a test that
// builds its own clients calls it first.
func CaptureLibraryLog(t testing.TB) {
	installLibLog()
	if _, dup := captured.LoadOrStore(t, true); dup {
		return
	}
	start := time.Now()
	t.Cleanup(func() {
		captured.Delete(t)
		if !t.Failed() {
			return
		}
		lines := libLog.since(start)
		if len(lines) == 0 {
			return
		}
		t.Logf("go-redis logged %d line(s) while this test ran (its logger is process-wide):", len(lines))
		for _, s := range lines {
			t.Log("  " + s)
		}
	})
}
