package jsondepth

import "testing"

func TestExceedsCountsNestingOutsideStrings(t *testing.T) {
	for _, tc := range []struct {
		data  string
		limit int
		want  bool
	}{
		{`{}`, 1, false},
		{`{"a":{}}`, 1, true},
		{`{"a":[1,{"b":2}]}`, 3, false},
		{`{"a":[1,{"b":2}]}`, 2, true},
		{`{"a":"[[[[{{{{"}`, 1, false},
		{`{"a":"\"[[["}`, 1, false},
		{`[[[`, 2, true}, // not validated: the decoder rejects it
	} {
		if got := Exceeds([]byte(tc.data), tc.limit); got != tc.want {
			t.Errorf("Exceeds(%s, %d) = %v, want %v", tc.data, tc.limit, got, tc.want)
		}
	}
}
