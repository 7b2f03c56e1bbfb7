package main

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

// The version comes from what Go recorded in the binary, then from the
// -ldflags stamp, then "dev".
func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: at},
			{Key: "vcs.modified", Value: modified},
		}
	}
	const rev = "45101af1234a5678901234567890123456789012"
	cases := []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    buildVersion
	}{
		{"no build info", "", nil, buildVersion{Version: "dev"}},
		{"ldflags only", "v1.2.0", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, buildVersion{Version: "v1.2.0"}},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0"}}, buildVersion{Version: "v1.3.0"}},
		{"go build in a checkout", "45101af-dirty",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261205125700-45101af1234a+dirty"}, Settings: vcs(rev, "2026-12-05T12:57:00Z", "true")},
			buildVersion{Version: "v0.0.0-20261205125700-45101af1234a+dirty", Revision: rev, Time: "2026-12-05T12:57:00Z", Modified: true}},
		{"revision without a module version", "dev",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "2026-12-05T12:57:00Z", "false")},
			buildVersion{Version: "devel-45101af1234a", Revision: rev, Time: "2026-12-05T12:57:00Z"}},
		{"modified tree", "dev",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "", "true")},
			buildVersion{Version: "devel-45101af1234a+dirty", Revision: rev, Modified: true}},
	}
	for _, c := range cases {
		if got := versionOf(c.stamped, c.info); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// taskq version and --version show the revision and its time; -o json gives
// them as fields.
func TestVersionShowsRevision(t *testing.T) {
	t.Parallel()
	v := buildVersion{Version: "v0.0.0-20261205125700-45101af1234a+dirty", Revision: "45101af1234a5678901234567890123456789012", Time: "2026-12-05T12:57:00Z", Modified: true}
	var out strings.Builder
	s := streams{stdin: strings.NewReader(""), stdout: &out, stderr: &strings.Builder{}, getenv: func(string) string { return "" }}
	if code := run(context.Background(), []string{"--version"}, s, v); code != 0 {
		t.Fatalf("--version: exit %d", code)
	}
	want := "taskq v0.0.0-20261205125700-45101af1234a+dirty (go"
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), ", commit 45101af1234a of 2026-12-05T12:57:00Z, modified)\n") {
		t.Errorf("--version: %q, want %q... with the commit, its time and \"modified\"", out.String(), want)
	}
	out.Reset()
	if code := run(context.Background(), []string{"version", "-o", "json"}, s, v); code != 0 {
		t.Fatalf("version -o json: exit %d", code)
	}
	var got struct {
		Version, Revision, Time string
		Modified                bool
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || got.Version != v.Version || got.Revision != v.Revision || got.Time != v.Time || !got.Modified {
		t.Errorf("version -o json: %q, %v", out.String(), err)
	}
}
