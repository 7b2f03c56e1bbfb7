package worker

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

func testRegistrar(st *fakeStore, conflict definitionConflict, defs ...*task.Definition) *registrar {
	return &registrar{store: st, defs: defs, consumer: "w", conflict: conflict, interval: 10 * time.Millisecond,
		opTimeout: time.Second, clock: systemClock{}, log: discard}
}

// Start returns once every consumer group exists and every definition is
// registered.
func TestRegistrarStartReturnsOnceRegistered(t *testing.T) {
	t.Parallel()
	a := task.Must[testIn, testIn]("a", task.Options{}).Definition()
	b := task.Must[testIn, testIn]("b", task.Options{}).Definition()
	st := &fakeStore{}
	r := testRegistrar(st, definitionReplace, a, b)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.groups) != 2 || st.groups[0] != "a" || st.groups[1] != "b" {
		t.Fatalf("groups %v, want [a b]", st.groups)
	}
	for _, n := range []string{"a", "b"} {
		var rec task.Registered
		if err := json.Unmarshal(st.registered[n], &rec); err != nil || rec.Worker != "w" || rec.Spec.Name != n {
			t.Fatalf("registration of %s: %s (%v)", n, st.registered[n], err)
		}
	}
}

// Under definitionRefuse a different registered definition fails Start
// with a *DefinitionConflictError, leaves the registration as it was and
// starts no loop.
func TestRegistrarRefusesAConflict(t *testing.T) {
	t.Parallel()
	a := task.Must[testIn, testIn]("a", task.Options{}).Definition()
	other, _ := json.Marshal(task.Registered{Hash: "other", Worker: "w0"})
	st := &fakeStore{registered: map[string][]byte{"a": other}}
	r := testRegistrar(st, definitionRefuse, a)
	err := r.Start(context.Background())
	var ce *DefinitionConflictError
	if !errors.As(err, &ce) || ce.RegisteredBy != "w0" || !errors.Is(err, ErrDefinitionConflict) {
		t.Fatalf("Start = %v, want a *DefinitionConflictError naming w0", err)
	}
	if string(st.registered["a"]) != string(other) {
		t.Fatal("the registered definition was replaced")
	}
	calls := st.calls.Load()
	time.Sleep(50 * time.Millisecond)
	if st.calls.Load() != calls {
		t.Fatal("the registry is checked after a refused Start")
	}
}

// Once started, a registration that disappears is put back within an
// interval, and one that is present is left as it is.
func TestRegistrarPutsBackALostRegistration(t *testing.T) {
	t.Parallel()
	a := task.Must[testIn, testIn]("a", task.Options{}).Definition()
	b := task.Must[testIn, testIn]("b", task.Options{}).Definition()
	st := &fakeStore{}
	r := testRegistrar(st, definitionReplace, a, b)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	st.mu.Lock()
	kept := st.registered["b"]
	delete(st.registered, "a")
	st.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st.mu.Lock()
		back, sameB := st.registered["a"] != nil, string(st.registered["b"]) == string(kept)
		st.mu.Unlock()
		if !sameB {
			t.Fatal("a registration that was present was written again")
		}
		if back {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the lost registration was not put back")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
