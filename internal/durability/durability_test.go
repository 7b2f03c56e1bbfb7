package durability

import (
	"strings"
	"testing"
	"time"
)

// Every bound is checked, and a durability within them has no problem.
func TestProblemNamesTheBound(t *testing.T) {
	for _, c := range []struct {
		replicas int
		timeout  time.Duration
		want     string
	}{
		{0, 0, ""},
		{ReplicasMax, TimeoutMax, ""},
		{1, time.Millisecond, ""},
		{-1, 0, "replicas -1 is outside [0, 100]"},
		{ReplicasMax + 1, 0, "replicas 101 is outside [0, 100]"},
		{1, -time.Second, "timeout -1s is outside [0, 1m0s]"},
		{1, TimeoutMax + 1, "is outside [0, 1m0s]"},
		{1, time.Microsecond, "below 1ms"},
	} {
		got := Problem(c.replicas, c.timeout)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Problem(%d, %s) = %q; want %q", c.replicas, c.timeout, got, c.want)
		}
	}
}
