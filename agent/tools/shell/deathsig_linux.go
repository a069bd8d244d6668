package shell

import "syscall"

// dieWithParent has the kernel kill the command if Rebound dies without
// cleaning up (kill -9, a crash): its own process group would otherwise
// outlive it. It reaches the shell and what the shell execs; a grandchild the
// shell forks still needs the group signal that a live Rebound sends.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
