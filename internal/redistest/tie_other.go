//go:build !linux

package redistest

import "os/exec"

// tie does nothing here: only Linux can kill a child when its parent dies,
// so elsewhere a test binary that is killed leaves its servers running.
func tie(*exec.Cmd) {}
