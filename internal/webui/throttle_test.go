package webui

import (
	"strconv"
	"testing"
	"time"
)

// Past signInTracked addresses the throttle grows no more: the addresses
// not yet counted share one budget, and an ended window frees its place.
func TestTheSignInThrottleIsBounded(t *testing.T) {
	clock := &stepClock{now: time.Now()}
	th := newSignInThrottle(clock)
	for i := range signInTracked {
		th.failed("10.0." + strconv.Itoa(i))
	}
	for range signInFailuresMax {
		th.failed("192.0.2.1")
	}
	if len(th.by) > signInTracked+1 {
		t.Fatalf("the throttle counts %d addresses, over its bound %d", len(th.by), signInTracked)
	}
	if th.wait("192.0.2.1") <= 0 || th.wait("192.0.2.2") <= 0 {
		t.Error("the addresses past the bound are not throttled by their shared budget")
	}
	if th.wait("10.0.1") != 0 {
		t.Error("an address with one failure is throttled")
	}
	clock.Add(signInWindow)
	th.failed("192.0.2.1")
	if th.wait("192.0.2.2") != 0 {
		t.Error("after the window ended another address is still throttled")
	}
	if len(th.by) != 1 {
		t.Errorf("after every window ended the throttle still counts %d addresses, want 1", len(th.by))
	}
}
