package mcp

import "syscall"

// dieWithParent has the kernel kill the server if Rebound dies without
// cleaning up (kill -9, a crash); its own process group would otherwise
// outlive Rebound. It reaches the server process only; its children still
// need the group signal that a live Rebound sends.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
