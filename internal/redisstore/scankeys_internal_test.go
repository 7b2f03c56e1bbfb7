package redisstore

import "testing"

// globMatch matches as Redis's MATCH does (stringmatchlen).
func TestGlobMatchIsRedisMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"order:1*", "order:12", true},
		{"order:1*", "order:2", false},
		{"order:1*", "x:order:1", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"[abc]x", "bx", true},
		{"[abc]x", "dx", false},
		{"[^abc]x", "bx", false},
		{"[^abc]x", "dx", true},
		{"[a-c]x", "bx", true},
		{"[c-a]x", "bx", true},
		{"[a-c]x", "dx", false},
		{`[\]]x`, "]x", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"[abc", "a", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"", "", true},
		{"", "a", false},
	} {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}
