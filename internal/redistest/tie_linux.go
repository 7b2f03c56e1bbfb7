//go:build linux

package redistest

import (
	"os/exec"
	"syscall"
)

// tie asks the kernel to SIGKILL cmd when the thread starting it ends.
func tie(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
