//go:build !linux

package main

import "syscall"

// dieWithParent is nil where the system cannot tie a child's life to its
// parent's: the benchmark stops its server when it ends normally.
func dieWithParent() *syscall.SysProcAttr { return nil }
