package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/engine"
)

// A child's key names its parent and its name, then its own key; ParentOf
// reads the parent back from a child's key and from nothing else.
func TestChildKeyAndParentOf(t *testing.T) {
	for _, c := range []struct{ parent, name, own, key string }{
		{"0190.3", "charge", "", "taskq:child:0190.3/charge"},
		{"0190", "#4", "order:7/x", "taskq:child:0190/#4/order:7/x"},
	} {
		if got := engine.ChildKey(c.parent, c.name, c.own); got != c.key {
			t.Errorf("ChildKey(%q, %q, %q) = %q, want %q", c.parent, c.name, c.own, got, c.key)
		}
		if got := engine.ParentOf(c.key); got != c.parent {
			t.Errorf("ParentOf(%q) = %q, want %q", c.key, got, c.parent)
		}
	}
	for _, k := range []string{"", "order:7", "taskq:child:", "taskq:child:p", "taskq:child:p/", "taskq:child:/n", "x-taskq:child:p/n"} {
		if got := engine.ParentOf(k); got != "" {
			t.Errorf("ParentOf(%q) = %q, want none", k, got)
		}
	}
}

// A name is printable ASCII without a space, "/" or "#", 1 to 128 bytes.
func TestCheckChildName(t *testing.T) {
	for _, ok := range []string{"a", "thumb-1", "order:7.x", strings.Repeat("n", engine.MaxChildNameBytes)} {
		if err := engine.CheckChildName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a/b", "#1", "a#1", "é", "tab\t", strings.Repeat("n", engine.MaxChildNameBytes+1)} {
		if err := engine.CheckChildName(bad); !errors.Is(err, engine.ErrInvalidChildName) {
			t.Errorf("%q: %v, want ErrInvalidChildName", bad, err)
		}
	}
}

// Children sort by name, the numbers after "#" as numbers.
func TestSortChildren(t *testing.T) {
	var cs []engine.Child
	for _, n := range []string{"thumb#10", "notify", "#10", "thumb#2", "#2", "#0", "thumb", "a#b"} {
		cs = append(cs, engine.Child{Name: n})
	}
	engine.SortChildren(cs)
	var got []string
	for _, c := range cs {
		got = append(got, c.Name)
	}
	if want := "[#0 #2 #10 a#b notify thumb thumb#2 thumb#10]"; fmt.Sprint(got) != want {
		t.Fatalf("sorted = %v, want %s", got, want)
	}
}
