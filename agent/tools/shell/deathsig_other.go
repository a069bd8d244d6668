//go:build unix && !linux

package shell

import "syscall"

// dieWithParent: only Linux has a parent-death signal.
func dieWithParent(*syscall.SysProcAttr) {}
