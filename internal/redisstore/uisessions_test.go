package redisstore_test

import (
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// A dashboard session is live once saved, until it is deleted, it expires
// or every session is ended; a session saved after "end all" is live, and
// a second store on the same namespace (another server) sees the same.
func TestUISessionsEndOneOrAll(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		other := redisstore.NewPartitioned(b.NewClient(t), b.Namespace, 1)
		live := func(s *redisstore.Store, id string) bool {
			t.Helper()
			ok, err := s.UISessionLive(f.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if live(f.s, "a") {
			t.Fatal("a session never saved is live")
		}
		for _, id := range []string{"a", "b"} {
			if err := f.s.UISessionSave(f.ctx, id, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if !live(f.s, "a") || !live(other, "a") || !live(other, "b") {
			t.Fatal("saved sessions are not live")
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.UISession("a")).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("the session's record expires in %v, want within the hour", ttl)
		}
		if err := other.UISessionDelete(f.ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if live(f.s, "a") || !live(f.s, "b") {
			t.Fatal("deleting one session did not end it alone")
		}
		if gen, err := other.UISessionEndAll(f.ctx); err != nil || gen != 1 {
			t.Fatalf("end all = %d, %v; want generation 1", gen, err)
		}
		if live(f.s, "b") {
			t.Fatal("a session saved before end all is live")
		}
		if err := f.s.UISessionSave(f.ctx, "c", time.Hour); err != nil {
			t.Fatal(err)
		}
		if !live(other, "c") || live(other, "b") {
			t.Fatal("after end all, a new session is not live, or an old one is")
		}
	})
}
