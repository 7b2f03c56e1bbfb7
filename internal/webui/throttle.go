package webui

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// Sign-in throttling: a client address that failed signInFailuresMax
// sign-ins within signInWindow of its first failure is answered 429, its
// token not checked, until that window ends. Each server counts on its
// own.
const (
	signInFailuresMax = 10
	signInWindow      = 5 * time.Minute
	// signInTracked bounds the addresses counted at once; past it, the
	// addresses not yet counted share one budget, so that a flood of
	// addresses cannot grow the map or escape the limit.
	signInTracked = 10000
)

// sharedBudget is the address counted for every address past
// signInTracked.
const sharedBudget = "(others)"

type signInTries struct {
	failures int
	since    time.Time
}

// signInThrottle counts failed sign-ins by client address.
type signInThrottle struct {
	clock task.Clock
	mu    sync.Mutex
	by    map[string]*signInTries
}

func newSignInThrottle(clock task.Clock) *signInThrottle {
	return &signInThrottle{clock: clock, by: map[string]*signInTries{}}
}

// entry returns addr's count, nil when its window has ended. Called with
// mu held.
func (t *signInThrottle) entry(addr string, now time.Time) *signInTries {
	e := t.by[addr]
	if e != nil && now.Sub(e.since) >= signInWindow {
		delete(t.by, addr)
		return nil
	}
	return e
}

// wait returns how long addr must wait before its next sign-in is
// checked (0: now).
func (t *signInThrottle) wait(addr string) time.Duration {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(addr, now)
	if e == nil {
		if _, tracked := t.by[addr]; !tracked && len(t.by) >= signInTracked {
			e = t.entry(sharedBudget, now)
		}
	}
	if e == nil || e.failures < signInFailuresMax {
		return 0
	}
	return e.since.Add(signInWindow).Sub(now)
}

// failed counts a failed sign-in from addr.
func (t *signInThrottle) failed(addr string) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(addr, now)
	if e == nil {
		if len(t.by) >= signInTracked {
			for a := range t.by {
				t.entry(a, now) // drops the ended windows
			}
		}
		if len(t.by) >= signInTracked {
			addr = sharedBudget
			e = t.entry(addr, now)
		}
	}
	if e == nil {
		e = &signInTries{since: now}
		t.by[addr] = e
	}
	e.failures++
}

// clientAddr is the address a request's client is counted under: the
// connection's remote IP address. Behind a reverse proxy that is the
// proxy's, so every client through it shares one budget; no header
// (X-Forwarded-For) is believed, since a client can send any.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
