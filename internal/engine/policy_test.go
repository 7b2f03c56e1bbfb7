package engine

import "testing"

func TestValidPolicy(t *testing.T) {
	for _, p := range []Policy{"", PolicyReject, PolicyAttach, PolicySupersede, PolicySignal} {
		if !ValidPolicy(p) {
			t.Errorf("%q is not valid", p)
		}
	}
	for _, p := range []Policy{"Reject", "replace", " reject"} {
		if ValidPolicy(p) {
			t.Errorf("%q is valid", p)
		}
	}
}
