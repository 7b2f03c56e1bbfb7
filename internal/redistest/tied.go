package redistest

import (
	"os/exec"
	"runtime"
	"sync"
)

// Processes the harness starts (redis-servers) must not outlive the test
// binary, which can end without running cleanups: a panic, a -timeout, a
// SIGKILL. On Linux a child can ask the kernel for a signal when its parent
// dies (PR_SET_PDEATHSIG), but "parent" is the thread that forked it, and
// Go may end threads. So every tied child is started from one goroutine
// locked to its thread for the life of the process: the thread never ends
// before the process does.

var (
	keeperOnce sync.Once
	keeper     chan func()
)

// onKeeperThread runs f on the process's keeper thread and waits for it.
func onKeeperThread(f func()) {
	keeperOnce.Do(func() {
		keeper = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range keeper {
				f()
			}
		}()
	})
	done := make(chan struct{})
	keeper <- func() { defer close(done); f() }
	<-done
}

// startTied starts cmd so that it is killed when this process ends.
func startTied(cmd *exec.Cmd) error {
	tie(cmd)
	var err error
	onKeeperThread(func() { err = cmd.Start() })
	return err
}
