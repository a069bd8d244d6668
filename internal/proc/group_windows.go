package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows has no signals to send a group: hangup does nothing and
// terminate ends the command's job at once.
type groupSignal int

const (
	sigHangup groupSignal = iota
	sigTerminate
)

func (groupSignal) os() os.Signal { return os.Kill }

// setGroup starts the command suspended, so that it runs nothing before it
// is in its job (see group.join), with no console window of its own, and
// with c.CmdLine as its command line when one is given.
func setGroup(cmd *exec.Cmd, c Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW,
		CmdLine:       c.CmdLine,
	}
	return nil
}

// group is the job object the command runs in. Its children join it as
// they start (and theirs, and so on: a process cannot leave a job), and
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE kills every process in it when the
// last handle closes: when the command exits (Wait), when Kill is called,
// and when Rebound itself dies, whose handles the system closes. This is
// what the reaper does on Linux.
type group struct {
	job windows.Handle // 0 once released
}

// join puts the just started, still suspended command in a new job, then
// lets its thread run.
func (g *group) join(cmd *exec.Cmd) error {
	pid := uint32(cmd.Process.Pid)
	job, err := newKillOnCloseJob()
	if err != nil {
		return fmt.Errorf("job object: %w", err)
	}
	// The pid cannot be reused while cmd.Process holds its handle.
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("open process %d: %w", pid, err)
	}
	err = windows.AssignProcessToJobObject(job, ph)
	windows.CloseHandle(ph)
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("assign process %d to its job: %w", pid, err)
	}
	g.job = job
	if err := resumeProcess(pid); err != nil {
		g.release() // kills it
		return fmt.Errorf("resume process %d: %w", pid, err)
	}
	return nil
}

// JoinKillOnCloseJob puts the calling process in a job object of its own
// whose last handle, held by this process alone, kills every process in
// it: when this process exits or is killed, whatever it started (which
// joins the job as it starts) dies with it. For Rebound's binary run as a
// command's parent in an editor's terminal (agent/tools/shell).
func JoinKillOnCloseJob() error {
	job, err := newKillOnCloseJob()
	if err != nil {
		return fmt.Errorf("job object: %w", err)
	}
	if err := windows.AssignProcessToJobObject(job, windows.CurrentProcess()); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("join a job object: %w", err)
	}
	return nil // the handle stays open until the process ends
}

func newKillOnCloseJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

// resumeProcess resumes the threads of a process started suspended: one,
// its main thread, whose handle os/exec has already closed, so it is found
// by a snapshot of the system's threads.
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return err
	}
	if resumed == 0 {
		return errors.New("no thread found")
	}
	return nil
}

// signal: terminate ends the whole job; there is no hangup to send.
func (g *group) signal(p *os.Process, sig groupSignal) {
	if sig != sigHangup {
		g.kill(p.Pid)
		_ = p.Kill()
	}
}

// kill ends every process in the job. After release there is no job left
// (everything in it was killed then), and a pid alone could by now name a
// stranger's process, so nothing is done.
func (g *group) kill(int) {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
	}
}

// release closes the job, which kills whatever the command left running.
func (g *group) release() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
		g.job = 0
	}
}

// ExitStatus: without signals, only an exit code.
func ExitStatus(ps *os.ProcessState) (*int, string) {
	if ps == nil || !ps.Exited() {
		return nil, ""
	}
	code := ps.ExitCode()
	return &code, ""
}
