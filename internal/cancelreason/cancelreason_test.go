package cancelreason

import "testing"

// A concurrency group's cancel reasons read back as what they say, and no
// other reason does.
func TestParseReadsWhatDisplacedAndFullGroupWrite(t *testing.T) {
	for _, c := range []struct {
		reason, group, by string
		ok                bool
	}{
		{Displaced("r2", `acme "eu" | x`), `acme "eu" | x`, "r2", true},
		{FullGroup("acme", 2, 2), "acme", "", true},
		{"displaced by run r2 somewhere", "", "", false},
		{"cancelled by the operator", "", "", false},
		{Superseded("r3"), "", "", false},
	} {
		group, by, ok := Parse(c.reason)
		if group != c.group || by != c.by || ok != c.ok {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q, %v", c.reason, group, by, ok, c.group, c.by, c.ok)
		}
	}
}

// A supersede's reason reads back as the run that superseded it, and no
// concurrency group's reason does.
func TestSupersededByReadsWhatSupersededWrites(t *testing.T) {
	if by, ok := SupersededBy(Superseded("r3")); !ok || by != "r3" {
		t.Errorf("SupersededBy(Superseded(r3)) = %q, %v; want r3, true", by, ok)
	}
	if by, ok := SupersededBy(Displaced("r2", "acme")); ok {
		t.Errorf("SupersededBy of a displaced run = %q, true; want false", by)
	}
}
