package main

import (
	"runtime/debug"
	"strings"
)

// buildVersion says which taskq this binary is. It prefers what the Go
// toolchain recorded in the binary: the module version for
// `go install github.com/taskq/taskq/cmd/taskq@v1.2.0` (and for a build in a
// checkout, the pseudo-version Go derives from its commit), else the VCS
// revision, with "+dirty" when the tree had uncommitted changes. Without
// either (a build with -buildvcs=false, or outside a repository), it is the
// version given with -ldflags "-X main.version=..." (make build), else "dev".
type buildVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// readVersion reads the binary's build information; stamped is the value of
// main.version.
func readVersion(stamped string) buildVersion {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return versionOf(stamped, info)
}

// versionOf is readVersion on given build information (nil when there is
// none).
func versionOf(stamped string, info *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: stamped}
	if v.Version == "" {
		v.Version = "dev"
	}
	if info == nil {
		return v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	switch mv := info.Main.Version; {
	case mv != "" && mv != "(devel)":
		v.Version = mv
	case v.Revision != "":
		v.Version = "devel-" + shortRevision(v.Revision)
		if v.Modified {
			v.Version += "+dirty"
		}
	}
	return v
}

// shortRevision is a commit hash cut to 12 characters, as Go's
// pseudo-versions show it.
func shortRevision(rev string) string {
	if len(rev) > 12 && !strings.ContainsAny(rev[:12], " ") {
		return rev[:12]
	}
	return rev
}
