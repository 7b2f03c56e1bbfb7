// Package albums is an example of child runs: an album's run spawns one
// child run per photo to make its thumbnail, waits for them all, then
// publishes the album and spawns a detached notification.
//
// The album's run may be retried (publishing failed), or delivered again
// after its worker died: each time it spawns the same children, by name,
// and gets back the thumbnails made before instead of making them again.
// Cancelling the album's run cancels the thumbnails still being made, not
// the notification, spawned detached.
//
// The example worker (examples/album-worker) runs these tasks.
package albums

import (
	"context"
	"fmt"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Album is the input of ProcessAlbum and of NotifyOwner.
type Album struct {
	AlbumID string   `json:"albumId"`
	Owner   string   `json:"owner"`
	Photos  []string `json:"photos"`
}

// Photo is the input of MakeThumbnail.
type Photo struct {
	AlbumID string `json:"albumId"`
	PhotoID string `json:"photoId"`
}

// Thumbnail is the result of MakeThumbnail.
type Thumbnail struct {
	PhotoID string `json:"photoId"`
	URL     string `json:"url"`
}

// Summary is the result of ProcessAlbum.
type Summary struct {
	AlbumID    string      `json:"albumId"`
	Thumbnails []Thumbnail `json:"thumbnails"`
}

// ProcessAlbum makes an album's thumbnails and publishes it, once per
// album while its run is active.
var ProcessAlbum = task.Must[Album, Summary]("process-album", task.Options{
	Idempotency: task.Status(`"album:" + input.albumId`, time.Hour),
	Retries:     3,
})

// MakeThumbnail makes one photo's thumbnail. Its key is derived from the
// photo: a child's key is its parent's run ID and its name, followed by
// this key (taskq:child:<album run>/thumb#0/thumb:<photo>).
var MakeThumbnail = task.Must[Photo, Thumbnail]("make-thumbnail", task.Options{
	Idempotency: task.Status(`"thumb:" + input.photoId`, 10*time.Minute),
	Retries:     3,
})

// NotifyOwner tells an album's owner it is published.
var NotifyOwner = task.Must[Album, struct{}]("notify-album-owner", task.Options{Retries: 5})

// Handler runs the tasks.
type Handler struct {
	// Delay stands in for the time a thumbnail takes.
	Delay time.Duration
	// Publish publishes an album with its thumbnails (nil: it does
	// nothing). An error fails the album's attempt, which is retried.
	Publish func(ctx context.Context, s Summary) error
}

// Register registers the three tasks' handlers on w.
func Register(w *worker.Worker, h Handler) error {
	if err := worker.Handle(w, ProcessAlbum, h.Album); err != nil {
		return err
	}
	if err := worker.Handle(w, MakeThumbnail, h.Thumbnail); err != nil {
		return err
	}
	return worker.Handle(w, NotifyOwner, func(worker.Context, Album) (struct{}, error) { return struct{}{}, nil })
}

// Album is the handler of ProcessAlbum.
func (h Handler) Album(ctx worker.Context, a Album) (Summary, error) {
	photos := make([]Photo, len(a.Photos))
	for i, p := range a.Photos {
		photos[i] = Photo{AlbumID: a.AlbumID, PhotoID: p}
	}
	// One child per photo, named thumb#0, thumb#1, ...: a retry of this
	// run gets the same children back, those that ended included.
	refs, err := worker.SpawnMany(ctx, MakeThumbnail, photos, client.ChildName("thumb"))
	if err != nil {
		return Summary{}, err
	}
	thumbs, err := client.WaitAll(ctx, refs)
	if err != nil {
		return Summary{}, fmt.Errorf("album %s: %w", a.AlbumID, err)
	}
	s := Summary{AlbumID: a.AlbumID, Thumbnails: thumbs}
	if h.Publish != nil {
		if err := h.Publish(ctx, s); err != nil {
			return Summary{}, fmt.Errorf("album %s: publish: %w", a.AlbumID, err)
		}
	}
	// Detached: the owner is told even if this run is cancelled later.
	if _, err := worker.Spawn(ctx, NotifyOwner, a, client.ChildName("notify"), client.Detached()); err != nil {
		return Summary{}, err
	}
	return s, nil
}

// Thumbnail is the handler of MakeThumbnail.
func (h Handler) Thumbnail(ctx worker.Context, p Photo) (Thumbnail, error) {
	if h.Delay > 0 {
		t := time.NewTimer(h.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return Thumbnail{}, context.Cause(ctx)
		case <-t.C:
		}
	}
	return Thumbnail{PhotoID: p.PhotoID, URL: "https://cdn.example.com/" + p.AlbumID + "/" + p.PhotoID + "-thumb.jpg"}, nil
}
