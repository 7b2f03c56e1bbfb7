package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// The hook records one operation per item of a batched call, each with its
// own reply, though start and finish answer with one flat array whose
// items differ in length (a delivery without a spec gets the record's
// values too).
func TestHookSplitsBatchedReplies(t *testing.T) {
	b := redistest.Real(t)
	rdb := redis.NewClient(&redis.Options{Addr: b.Client.(*redis.Client).Options().Addr})
	t.Cleanup(func() { rdb.Close() })
	var buf strings.Builder
	rec := NewRecorder("p1", &buf)
	rdb.AddHook(NewHook(rec))
	ctx, now := context.Background(), time.Now()
	st := redisstore.New(rdb, b.Namespace)
	var ps []*redisstore.EnqueueParams
	for _, id := range []string{"a", "b", "c"} {
		ps = append(ps, &redisstore.EnqueueParams{RunID: id, Task: "t", Input: []byte(`{}`), Meta: []byte(`{}`),
			Key: "k-" + id, Strategy: redisstore.StrategyStatus, Hold: time.Minute, Retention: time.Minute, Now: now})
	}
	if _, errs := st.EnqueueBatch(ctx, ps); errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatal(errs)
	}
	if err := st.EnsureGroup(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	ds, err := st.ReadGroup(ctx, "w1", []string{"t"}, 10, -1)
	if err != nil || len(ds) != 3 {
		t.Fatalf("read %d, %v", len(ds), err)
	}
	ds[0].Spec = nil // started from the record: a longer reply
	rdb.Del(ctx, st.Keys().Run("c"))
	sts, _ := st.StartBatch(ctx, "w1", now, ds)
	var fps []*redisstore.FinishParams
	for i, d := range ds[:2] {
		fps = append(fps, &redisstore.FinishParams{RunID: d.RunID, Attempt: sts[i].Attempt, Outcome: redisstore.OutcomeSucceeded,
			Now: now, Task: d.Task, EntryID: d.EntryID, Spec: sts[i].Spec})
	}
	st.FinishBatch(ctx, fps)

	ops, err := Read(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range ops {
		if op.Kind == KindStart || op.Kind == KindFinish {
			got = append(got, string(op.Kind)+" "+op.RunID+" "+string(op.Result.Code)+" "+op.Result.Status)
		}
	}
	want := []string{
		"start a ok running", "start b ok running", "start c refused missing",
		"finish a ok succeeded", "finish b ok succeeded",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
