package main

import "syscall"

// dieWithParent makes a child process get SIGKILL when the benchmark
// dies, even when it is killed itself.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
