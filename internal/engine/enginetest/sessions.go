package enginetest

import (
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var sessionCases = []suiteCase{
	{"SessionsEndOneOrAll", sessionsEnd},
	{"SessionExpires", sessionExpires},
}

func live(h *h, e engine.Engine, id string) bool {
	h.Helper()
	ok, err := e.UISessionLive(h.ctx, id)
	if err != nil {
		h.Fatal(err)
	}
	return ok
}

// A session is live once saved until it is deleted or every session is
// ended; one saved after "end all" is live; another engine on the
// namespace (another server) sees the same.
func sessionsEnd(h *h) {
	other := h.e
	if h.opts.Reopen != nil {
		other = h.opts.Reopen(h.T, h.e, 0)
	}
	if live(h, h.e, "a") {
		h.Fatal("a session never saved is live")
	}
	for _, id := range []string{"a", "b"} {
		if err := h.e.UISessionSave(h.ctx, id, time.Hour); err != nil {
			h.Fatal(err)
		}
	}
	if !live(h, h.e, "a") || !live(h, other, "a") || !live(h, other, "b") {
		h.Fatal("saved sessions are not live")
	}
	if err := other.UISessionDelete(h.ctx, "a"); err != nil {
		h.Fatal(err)
	}
	if live(h, h.e, "a") || !live(h, h.e, "b") {
		h.Fatal("deleting one session did not end it alone")
	}
	if gen, err := other.UISessionEndAll(h.ctx); err != nil || gen != 1 {
		h.Fatalf("end all = %d, %v; want generation 1", gen, err)
	}
	if live(h, h.e, "b") {
		h.Fatal("a session saved before end all is live")
	}
	if err := h.e.UISessionSave(h.ctx, "c", time.Hour); err != nil {
		h.Fatal(err)
	}
	if !live(h, other, "c") || live(h, other, "b") {
		h.Fatal("after end all, a new session is not live, or an old one is")
	}
	if m := h.open(h.T); live(h, m, "c") {
		h.Fatal("another namespace sees the session")
	}
}

func sessionExpires(h *h) {
	if err := h.e.UISessionSave(h.ctx, "s", 50*time.Millisecond); err != nil {
		h.Fatal(err)
	}
	h.eventually("the session expires", func() bool {
		h.elapse(50 * time.Millisecond)
		return !live(h, h.e, "s")
	})
}
