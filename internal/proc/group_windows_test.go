package proc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// The test binary plays two parts: a command that starts a grandchild and
// exits at once, and that grandchild, which would run until killed.
const envJobPart = "REBOUND_PROC_JOB_PART"

func init() {
	switch os.Getenv(envJobPart) {
	case "grandchild":
		// Not a test's wait: this process's part is to outlive its parent
		// until the job kills it. (select{} would die of deadlock.)
		time.Sleep(time.Hour)
	case "parent":
		exe, _ := os.Executable()
		c := exec.Command(exe)
		c.Env = append(os.Environ(), envJobPart+"=grandchild")
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(c.Process.Pid) + "\n")
		os.Exit(0) // leaves the grandchild running
	}
}

// Whatever a command starts dies with it: its grandchild, left running when
// it exits, is in its job, which Wait closes.
func TestJob_GrandchildDiesWithCommand(t *testing.T) {
	for _, how := range []string{"exit", "kill"} {
		t.Run(how, func(t *testing.T) {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			p, err := Start(Cmd{Name: exe, Env: append(os.Environ(), envJobPart+"=parent"), Stdout: pw})
			pw.Close()
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil {
				t.Fatalf("reading the grandchild's pid: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
			if err != nil {
				t.Fatalf("open grandchild %d: %v", pid, err)
			}
			defer windows.CloseHandle(h)
			if how == "kill" {
				p.Kill()
			}
			if _, err := p.Wait(); err != nil && how == "exit" {
				t.Fatalf("wait: %v", err)
			}
			// A wait on the grandchild's handle, not a sleep: it is signalled
			// when the grandchild dies, which the job's closing makes at once.
			if ev, err := windows.WaitForSingleObject(h, 20_000); err != nil || ev != windows.WAIT_OBJECT_0 {
				t.Fatalf("grandchild %d still running after the command's Wait (%#x, %v)", pid, ev, err)
			}
		})
	}
}

// A command line given whole reaches cmd.exe as it is: quotes, & and all.
func TestStart_CmdLine(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	p, err := Start(Cmd{Name: "cmd.exe", CmdLine: `cmd.exe /d /s /c "echo "a  b"& echo c"`, Stdout: pw})
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pr)
	var got []string
	for sc.Scan() {
		got = append(got, strings.TrimSpace(sc.Text()))
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != `"a  b"|c` {
		t.Fatalf("output %q, want \"a  b\" then c", got)
	}
}
