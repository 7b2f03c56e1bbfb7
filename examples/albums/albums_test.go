package albums_test

// These tests use package taskqtest, as an application's own tests would:
// copied into another module, they run with nothing installed.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/examples/albums"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/taskqtest"
	"github.com/taskq/taskq/pkg/worker"
)

var album = albums.Album{AlbumID: "summer", Owner: "ada@example.com", Photos: []string{"beach", "dunes", "pier"}}

// An album's run makes one thumbnail per photo in child runs, then spawns
// the owner's notification; each child knows its parent.
func TestAlbumSpawnsAThumbnailPerPhoto(t *testing.T) {
	h := taskqtest.New(t)
	h.StartWorker(func(w *worker.Worker) error { return albums.Register(w, albums.Handler{}) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()

	ref, err := client.RunNoWait(ctx, c, albums.ProcessAlbum, album)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ref.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Thumbnails) != 3 || s.Thumbnails[1].PhotoID != "dunes" {
		t.Fatalf("summary = %+v", s)
	}
	info, err := c.Inspector().GetRun(ctx, ref.ID())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ch := range info.Children {
		names = append(names, ch.Name)
	}
	if len(names) != 4 || names[0] != "notify" || names[1] != "thumb#0" || names[3] != "thumb#2" {
		t.Fatalf("children = %v", names)
	}
	thumb := taskqtest.RequireTriggered(t, h, albums.MakeThumbnail, taskqtest.WithInput(albums.Photo{AlbumID: "summer", PhotoID: "pier"}))
	if thumb.Info.Parent != ref.ID() || thumb.Info.IdempotencyKey != "taskq:child:"+ref.ID()+"/thumb#2/thumb:pier" {
		t.Fatalf("thumbnail run: parent %q, key %q", thumb.Info.Parent, thumb.Info.IdempotencyKey)
	}
	taskqtest.RequireTriggeredN(t, h, albums.NotifyOwner, 1)
}

// An album whose publishing fails once is retried: the retry gets the
// thumbnails made by the first attempt, and makes none again.
func TestRetriedAlbumMakesNoThumbnailTwice(t *testing.T) {
	h := taskqtest.New(t)
	var publishes atomic.Int32
	failed := make(chan struct{}, 1)
	h.StartWorker(func(w *worker.Worker) error {
		return albums.Register(w, albums.Handler{Publish: func(context.Context, albums.Summary) error {
			if publishes.Add(1) == 1 {
				failed <- struct{}{}
				return errors.New("the CDN is down")
			}
			return nil
		}})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref, err := client.RunNoWait(ctx, h.Client(), albums.ProcessAlbum, album)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-ctx.Done():
		t.Fatal("the first attempt did not publish")
	}
	// Once the failure is recorded (its retry scheduled by the harness's
	// clock), move the clock past the retry's backoff.
	for {
		info, err := ref.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Failures == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the first attempt's failure was not recorded")
		case <-time.After(10 * time.Millisecond):
		}
	}
	h.Advance(time.Minute)
	if _, err := ref.Result(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := ref.Get(ctx); info.Attempt != 2 {
		t.Fatalf("album run after %d attempts, want 2", info.Attempt)
	}
	taskqtest.RequireTriggeredN(t, h, albums.MakeThumbnail, 3)
	taskqtest.RequireTriggeredN(t, h, albums.NotifyOwner, 1)
}
