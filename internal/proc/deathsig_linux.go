package proc

import "syscall"

// dieWithParent has the kernel kill a directly started command if Rebound
// dies without cleaning up (kill -9, a crash): its own process group would
// otherwise outlive it. It reaches the command and what the command execs; a
// child the command forks still needs the group signal that a live Rebound
// sends.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
