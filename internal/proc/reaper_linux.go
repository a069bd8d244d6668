package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The reaper is Rebound's own binary run again: /proc/self/exe, which still
// names the running binary when the file on disk has been replaced by an
// upgrade. Its arguments are the program's resolved path, then the
// command's argv; envReaper in its environment says it is a reaper, and
// ctlFD is one end of a socket pair whose other end Rebound keeps:
//
//   - Rebound writes the command's environment on it, as "<length>\n" and
//     that many bytes of NUL-terminated entries. Not in the reaper's own
//     environment, which is kept to envReaper so that the command's GODEBUG
//     or GOMAXPROCS do not tune the reaper; not in its arguments, which any
//     user can read in /proc.
//   - The reaper writes one line: "P <pid>" once the command has started,
//     or "E <errno>" when it could not be started.
//   - Rebound closes its end to have everything killed (Kill); the kernel
//     closes it when Rebound dies, however it dies, so that needs no
//     parent-death signal, which Linux ties to the thread that forked, not
//     to the process, and which would leave a window before it is set.
const (
	selfExe    = "/proc/self/exe"
	envReaper  = "REBOUND_PROC_REAPER"
	reaperMode = "1"
	ctlFD      = 3 // ExtraFiles[0]
	reaperArg0 = "rebound-reaper"
	// maxEnv bounds the environment the reaper reads: Linux takes at most
	// a few MiB of arguments and environment together.
	maxEnv = 16 << 20
)

const (
	// startTimeout bounds the wait for the reaper to say whether the command
	// started: it is the start-up of a Go program, a few milliseconds.
	startTimeout = 10 * time.Second
	// teardownLimit bounds the reaper's killing of what the command left.
	// Only a process stuck in the kernel, or one that forks faster than
	// the reaper kills, holds it that long.
	teardownLimit = 3 * time.Second
)

// init turns the process into a reaper when it was started as one. It is an
// init function, not a call in main, so that every binary linking this
// package can be the reaper, the test binaries of the packages that start
// commands included, without help from their main or TestMain; and the
// command starts before the initialisation of the packages that import this
// one.
func init() {
	if os.Getenv(envReaper) != reaperMode {
		return
	}
	if !isSocket(ctlFD) {
		// Set by someone else, not by Start: be the program asked for.
		_ = os.Unsetenv(envReaper)
		return
	}
	os.Exit(reap())
}

func isSocket(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
}

// canReap reports whether a reaper can be run: not where /proc is missing.
var canReap = sync.OnceValue(func() bool { return unix.Access(selfExe, unix.X_OK) == nil })

// startReaped starts the reaper, which starts the command, and waits until
// it says whether the command started.
func startReaped(c Cmd, name string, env []string) (*Process, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	// Non-blocking, so that the read of the start line can time out.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, os.NewSyscallError("setnonblock", err)
	}
	ctl := os.NewFile(uintptr(fds[0]), "reaper control")
	theirs := os.NewFile(uintptr(fds[1]), "reaper control")
	cmd := &exec.Cmd{
		Path:       selfExe,
		Args:       append([]string{reaperArg0, name, c.Name}, c.Args...),
		Dir:        c.Dir,
		Env:        append([]string{envReaper + "=" + reaperMode}, reaperEnv...),
		ExtraFiles: []*os.File{theirs},
		// A group of its own, apart from Rebound's and the command's: a
		// terminal's ^C to Rebound does not reach it, and the signals it
		// forwards to the command's group do not reach it either.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	setStdio(cmd, c)
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		ctl.Close()
		return nil, err
	}
	err = writeEnv(ctl, env)
	var pid int
	if err == nil {
		pid, err = readStarted(ctl, name)
	}
	if err != nil {
		ctl.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return &Process{cmd: cmd, pid: pid, ctl: ctl}, nil
}

func writeEnv(ctl *os.File, env []string) error {
	var b bytes.Buffer
	for _, kv := range env {
		if !strings.HasPrefix(kv, envReaper+"=") {
			b.WriteString(kv)
			b.WriteByte(0)
		}
	}
	if b.Len() > maxEnv {
		return errors.New("the environment is too large")
	}
	_ = ctl.SetWriteDeadline(time.Now().Add(startTimeout))
	if _, err := fmt.Fprintf(ctl, "%d\n%s", b.Len(), b.Bytes()); err != nil {
		return fmt.Errorf("the process reaper did not take the environment: %w", err)
	}
	return nil
}

// readEnv reads what writeEnv wrote.
func readEnv(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(line, "\n"))
	if err != nil || n < 0 || n > maxEnv {
		return nil, syscall.EINVAL
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	env := strings.Split(string(b), "\x00")
	return env[:len(env)-1], nil // the last entry ends with NUL too
}

// readStarted reads the reaper's start line.
func readStarted(ctl *os.File, name string) (int, error) {
	_ = ctl.SetReadDeadline(time.Now().Add(startTimeout))
	var line []byte
	buf := make([]byte, 32)
	for !bytes.Contains(line, []byte("\n")) && len(line) < 64 {
		n, err := ctl.Read(buf)
		line = append(line, buf[:n]...)
		if err != nil {
			break
		}
	}
	kind, num, _ := strings.Cut(strings.TrimSpace(string(line)), " ")
	n, err := strconv.Atoi(num)
	switch {
	case err == nil && kind == "P" && n > 0:
		return n, nil
	case err == nil && kind == "E":
		return 0, &os.PathError{Op: "fork/exec", Path: name, Err: syscall.Errno(n)}
	}
	return 0, fmt.Errorf("the process reaper for %s did not start it", name)
}

// reap is the reaper's life; it does not return when the command was killed
// by a signal, and otherwise returns the exit status for os.Exit.
func reap() int {
	ctl := os.NewFile(ctlFD, "reaper control")
	syscall.CloseOnExec(ctlFD) // the command must not reach Rebound's socket
	if len(os.Args) < 3 {
		return failStart(ctl, syscall.EINVAL)
	}
	path, argv := os.Args[1], os.Args[2:]
	in := bufio.NewReader(ctl)
	env, err := readEnv(in)
	if err != nil {
		return failStart(ctl, err)
	}
	// Orphans below the reaper become its children rather than init's, so
	// it can find and kill them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return failStart(ctl, err)
	}
	forward := make(chan os.Signal, 4)
	signal.Notify(forward, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	r := &reaper{chld: make(chan os.Signal, 1)}
	signal.Notify(r.chld, syscall.SIGCHLD)
	if err := r.start(path, argv, env); err != nil {
		return failStart(ctl, err)
	}
	detachStdio()
	fmt.Fprintf(ctl, "P %d\n", r.pid)
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in) // Rebound writes nothing more: this is EOF
		close(stop)
	}()
	r.wait(forward, stop)
	r.killTheRest()
	return r.exitCode()
}

// failStart tells Rebound why the command was not started, as an errno,
// and is the reaper's exit status then.
func failStart(ctl *os.File, err error) int {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = syscall.EINVAL
	}
	fmt.Fprintf(ctl, "E %d\n", int(errno))
	return 127
}

// reaper is the reaper's command and what became of it. Its methods run on
// one goroutine, and only it reaps: a pid it signals is a child not yet
// reaped, so it cannot have been reused.
type reaper struct {
	pid    int            // the command's, and its process group's
	chld   chan os.Signal // SIGCHLD
	status syscall.WaitStatus
	exited bool // the command was reaped, with status
}

// start starts the command in its own process group.
func (r *reaper) start(path string, argv, env []string) error {
	cmd, err := os.StartProcess(path, argv, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// The command's own group is what signals are forwarded to. If the
		// reaper is killed (SIGKILL leaves it no clean-up), the command
		// dies with it: Linux ties that signal to the forking thread, and
		// this runs in init, on the main thread, which lives as long as the
		// reaper.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return err
	}
	r.pid = cmd.Pid
	_ = cmd.Release() // reaped with wait4, as every other child
	return nil
}

// wait waits for the command to exit, forwarding the signals that ask it
// to stop to its group, and kills the group when stop closes (Rebound is
// gone).
func (r *reaper) wait(forward <-chan os.Signal, stop <-chan struct{}) {
	for !r.exited {
		select {
		case <-r.chld:
			r.reapAll()
		case s := <-forward:
			_ = syscall.Kill(-r.pid, s.(syscall.Signal))
		case <-stop:
			_ = syscall.Kill(-r.pid, syscall.SIGKILL)
			return
		}
	}
}

// reapAll reaps every child that has exited, noting the command's status;
// false when no child is left.
func (r *reaper) reapAll() bool {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return false // ECHILD
		case wpid == 0:
			return true
		case wpid == r.pid:
			r.status, r.exited = ws, true
		}
	}
}

// killTheRest kills whatever is left, a generation at a time: a process
// whose parent dies is reparented here and killed in the next round.
func (r *reaper) killTheRest() {
	deadline := time.Now().Add(teardownLimit)
	for {
		for _, c := range children() {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		if !r.reapAll() || time.Now().After(deadline) {
			return
		}
		t := time.NewTimer(time.Millisecond)
		select {
		case <-r.chld:
		case <-t.C:
		}
		t.Stop()
	}
}

// exitCode ends the reaper as the command ended: by its signal, or with
// its exit status.
func (r *reaper) exitCode() int {
	switch {
	case !r.exited:
		raise(syscall.SIGKILL) // it was being killed, and is stuck in the kernel
	case r.status.Signaled():
		raise(r.status.Signal())
	}
	return r.status.ExitStatus()
}

// detachStdio points the reaper's standard streams at the null device, so
// that the command's reader sees the end of its output when the command and
// its children are done, whoever else holds the pipe, and a server sees the
// end of its input when Rebound closes it.
func detachStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	for fd := range 3 {
		if err != nil {
			unix.Close(fd)
			continue
		}
		_ = unix.Dup3(int(null.Fd()), fd, 0)
	}
	if err == nil {
		null.Close()
	}
}

// children lists the reaper's children: from /proc/self/task/*/children,
// else, where the kernel lacks those files, by scanning /proc.
func children() []int {
	var pids []int
	tasks, err := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		var b []byte
		if b, err = os.ReadFile("/proc/self/task/" + t.Name() + "/children"); err != nil {
			break
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	if err == nil {
		return pids
	}
	return scanChildren(os.Getpid())
}

// scanChildren finds the processes whose parent is ppid.
func scanChildren(ppid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid …": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// raise makes the reaper die of sig, as the command did, so that Rebound
// sees "killed by SIGSEGV" and not an exit code. Go's runtime handles
// several signals itself (SIGSEGV would be a crash report and exit status
// 2), so the disposition is reset in the kernel directly.
func raise(sig syscall.Signal) {
	// The command dumped its own core, if any; the reaper's is of no use.
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	// A zeroed sigaction is SIG_DFL with no flags and an empty mask in
	// every architecture's layout.
	var act [64]byte
	sigsetSize := uintptr(8)
	if strings.HasPrefix(runtime.GOARCH, "mips") {
		sigsetSize = 16
	}
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, sigsetSize, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
	// Still alive: a signal whose default action is not to terminate.
	time.Sleep(100 * time.Millisecond)
	os.Exit(128 + int(sig))
}
