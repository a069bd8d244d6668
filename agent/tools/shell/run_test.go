//go:build linux

package shell_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/agent/tools/shell"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// Every test here starts real processes, so real time passes. Waits are kept
// to a few hundred milliseconds by killing long sleeps, and bounds on
// Duration are generous: they separate "returned promptly" from "waited for
// sleep 30", not one scheduler from another.
const prompt = 3 * time.Second

var ignoreDuration = cmpopts.IgnoreFields(shell.Result{}, "Duration")

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts shell.Options
		want shell.Result
	}{
		{
			name: "exit zero",
			opts: shell.Options{Command: "echo hello"},
			want: shell.Result{Output: "hello\n", ExitCode: new(0)},
		},
		{
			name: "exit non-zero",
			opts: shell.Options{Command: "echo failing; exit 3"},
			want: shell.Result{Output: "failing\n", ExitCode: new(3)},
		},
		{
			name: "stderr interleaved with stdout",
			opts: shell.Options{Command: "echo out; echo err >&2; echo out again"},
			want: shell.Result{Output: "out\nerr\nout again\n", ExitCode: new(0)},
		},
		{
			name: "no output",
			opts: shell.Options{Command: "true"},
			want: shell.Result{ExitCode: new(0)},
		},
		{
			name: "working directory",
			opts: shell.Options{Command: "pwd -P", Dir: dir},
			want: shell.Result{Output: realDir + "\n", ExitCode: new(0)},
		},
		{
			name: "environment given",
			opts: shell.Options{Command: `printf '%s|%s' "$GREETING" "$HOME"`, Env: []string{"GREETING=hi"}},
			want: shell.Result{Output: "hi|", ExitCode: new(0)},
		},
		{
			name: "environment inherited",
			opts: shell.Options{Command: `printf %s "$PATH"`},
			want: shell.Result{Output: os.Getenv("PATH"), ExitCode: new(0)},
		},
		{
			// A command that reads stdin must see end of file, not hang.
			name: "stdin is empty",
			opts: shell.Options{Command: "cat; echo after"},
			want: shell.Result{Output: "after\n", ExitCode: new(0)},
		},
		{
			name: "killed by a signal",
			opts: shell.Options{Command: "echo dying; kill -SEGV $$"},
			want: shell.Result{Output: "dying\n", Signal: "SIGSEGV"},
		},
		{
			name: "invalid UTF-8 replaced",
			opts: shell.Options{Command: `printf 'a\377b\n'`},
			want: shell.Result{Output: "a\uFFFDb\n", ExitCode: new(0)},
		},
		{
			name: "explicit timeout reported",
			opts: shell.Options{Command: "true", Timeout: time.Minute},
			want: shell.Result{ExitCode: new(0), Timeout: time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.want.Timeout == 0 {
				tt.want.Timeout = shell.DefaultTimeout
			}
			got, err := shell.Run(t.Context(), tt.opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreDuration); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRun_StartFailure(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
	}{
		{"missing directory", filepath.Join(t.TempDir(), "missing")},
		{"directory is a file", file},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := shell.Run(t.Context(), shell.Options{Command: "true", Dir: tt.dir})
			if err == nil {
				t.Fatalf("Run succeeded, want an error; result %+v", got)
			}
			if diff := cmp.Diff(shell.Result{}, got); diff != "" {
				t.Errorf("Run result on error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRun_Timeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		// wantSignal is what killed the main process: SIGTERM when it
		// honours the first signal, SIGKILL when the grace ran out.
		wantSignal string
		// minDuration proves the grace was waited for when it had to be.
		minDuration time.Duration
	}{
		{
			name:       "group terminated",
			command:    "sleep 30 & echo $! > pid; echo before; sleep 30",
			wantSignal: "SIGTERM",
		},
		{
			// The grace is capped at the timeout (150ms), not KillGrace.
			name:        "SIGTERM ignored then killed",
			command:     "trap '' TERM; sleep 30 & echo $! > pid; echo before; sleep 30",
			wantSignal:  "SIGKILL",
			minDuration: 300 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const timeout = 150 * time.Millisecond
			got, err := shell.Run(t.Context(), shell.Options{Command: tt.command, Dir: dir, Timeout: timeout})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := shell.Result{Output: "before\n", Signal: tt.wantSignal, TimedOut: true, Timeout: timeout}
			if diff := cmp.Diff(want, got, ignoreDuration); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			if got.Duration < tt.minDuration || got.Duration > prompt {
				t.Errorf("Duration = %v, want within [%v, %v]", got.Duration, tt.minDuration, prompt)
			}
			waitGone(t, readPID(t, dir))
		})
	}
}

func TestRun_Cancel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The cancel comes once the command has printed and started its child,
	// which it says through a FIFO (the open blocks until the shell writes
	// it): a fixed delay cancelled before that on a loaded machine.
	ready := filepath.Join(dir, "ready")
	testkit.Mkfifo(t, ready)
	go func() {
		if b, err := os.ReadFile(ready); err != nil || len(b) == 0 {
			t.Errorf("reading the ready FIFO: %q, %v", b, err)
		}
		cancel()
	}()
	got, err := shell.Run(ctx, shell.Options{Command: "echo before; sleep 30 & echo $! > pid; echo go > ready; sleep 30", Dir: dir})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := shell.Result{Output: "before\n", Signal: "SIGTERM", Cancelled: true, Timeout: shell.DefaultTimeout}
	if diff := cmp.Diff(want, got, ignoreDuration); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
	if got.Duration > prompt {
		t.Errorf("Duration = %v, want at most %v", got.Duration, prompt)
	}
	waitGone(t, readPID(t, dir))
}

func TestRun_AlreadyCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, err := shell.Run(ctx, shell.Options{Command: "echo ran > marker", Dir: dir})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := shell.Result{Cancelled: true, Timeout: shell.DefaultTimeout}
	if diff := cmp.Diff(want, got, ignoreDuration); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the command ran: stat marker: %v", err)
	}
}

// Background children die when the main process exits, whatever they do
// to outlive it. None of them may keep Run waiting.
func TestRun_BackgroundChild(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
	}{
		{
			name:    "holding the output, hung up",
			command: "sleep 30 & echo $! > pid; echo done",
		},
		{
			name:    "holding the output, ignoring hangup, killed",
			command: "trap '' HUP; sleep 30 & echo $! > pid; echo done",
		},
		{
			// Like nohup with a redirect. A terminal would leave it
			// running; a model's command may not leave anything behind.
			name:    "detached from the output, ignoring hangup, killed",
			command: "trap '' HUP; sleep 30 >/dev/null 2>&1 & echo $! > pid; echo done",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			got, err := shell.Run(t.Context(), shell.Options{Command: tt.command, Dir: dir})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			pid := readPID(t, dir)
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			want := shell.Result{Output: "done\n", ExitCode: new(0), Timeout: shell.DefaultTimeout}
			if diff := cmp.Diff(want, got, ignoreDuration); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			if got.Duration > prompt {
				t.Errorf("Duration = %v, want at most %v", got.Duration, prompt)
			}
			waitGone(t, pid)
		})
	}
}

// escape leaves processes that no signal to the command's process group
// reaches: one in a session of its own (setsid), one double-forked into a
// session of its own, both holding the output, each writing its pid to a
// file; then it prints "before" once both have.
const escape = `setsid sh -c 'echo $$ > setsid.pid; exec sleep 60' &
sh -c 'setsid sh -c "echo \$\$ > double.pid; exec sleep 60" &'
while ! [ -s setsid.pid ] || ! [ -s double.pid ]; do sleep 0.01; done
echo before`

// Nothing the command started survives it, however Run ends: the command
// exits, times out, or is cancelled.
func TestRun_NothingOutlives(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		timeout time.Duration
		cancel  bool
		want    shell.Result
	}{
		{
			name:    "exits",
			command: escape,
			want:    shell.Result{Output: "before\n", ExitCode: new(0), Timeout: shell.DefaultTimeout},
		},
		{
			name:    "times out",
			command: escape + "; sleep 60",
			timeout: 500 * time.Millisecond,
			want:    shell.Result{Output: "before\n", Signal: "SIGTERM", TimedOut: true, Timeout: 500 * time.Millisecond},
		},
		{
			name:    "cancelled",
			command: escape + "; echo cancel; echo > ready; sleep 60",
			cancel:  true,
			want:    shell.Result{Output: "before\ncancel\n", Signal: "SIGTERM", Cancelled: true, Timeout: shell.DefaultTimeout},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx := t.Context()
			if tt.cancel {
				// Cancelled once the command has written to a FIFO:
				// reading it blocks until then, with no polling.
				fifo := filepath.Join(dir, "ready")
				testkit.Mkfifo(t, fifo)
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go func() {
					_, _ = os.ReadFile(fifo)
					cancel()
				}()
				// Frees the reader if the command never got there.
				defer func() {
					if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}()
			}
			got, err := shell.Run(ctx, shell.Options{Command: tt.command, Dir: dir, Timeout: tt.timeout})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreDuration); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			if got.Duration > prompt {
				t.Errorf("Duration = %v, want at most %v", got.Duration, prompt)
			}
			for _, name := range []string{"setsid.pid", "double.pid"} {
				pid := testkit.ReadPID(t, filepath.Join(dir, name))
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
				waitGone(t, pid)
			}
		})
	}
}

// Not parallel: it reads the process-wide allocation counter.
func TestRun_OutputLimit(t *testing.T) {
	const limit = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := shell.Run(t.Context(), shell.Options{
		Command:     "printf 'START\\n'; yes | head -c 50000000; printf 'END\\n'",
		OutputLimit: limit,
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("Run allocated %d bytes for 50 MB of output, want under 8 MiB", alloc)
	}
	if !got.Truncated {
		t.Error("Truncated = false, want true")
	}
	const total = len("START\n") + 50_000_000 + len("END\n")
	marker := fmt.Sprintf("[... %d bytes of output omitted ...]\n", total-limit)
	head, tail, ok := strings.Cut(got.Output, marker)
	if !ok {
		t.Fatalf("Output lacks marker %q:\n%s", marker, got.Output)
	}
	if len(got.Output) > limit+len(marker) {
		t.Errorf("len(Output) = %d, want at most %d", len(got.Output), limit+len(marker))
	}
	if want := "START\n" + strings.Repeat("y\n", (limit/2-len("START\n"))/2); head != want {
		t.Errorf("head = %q, want %q", head, want)
	}
	if want := strings.Repeat("y\n", (limit/2-len("END\n"))/2) + "END\n"; tail != want {
		t.Errorf("tail = %q, want %q", tail, want)
	}
}

// Limits that put the cuts inside a multi-byte rune, at every offset: the
// seams must drop the partial rune, not show replacement characters.
func TestRun_OutputLimitUTF8(t *testing.T) {
	t.Parallel()
	const line = "é€😀\n" // 2, 3 and 4 bytes, then 1: 10 bytes
	const total = 100_000
	for _, limit := range []int{1001, 1003, 1005, 1007, 1009} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			t.Parallel()
			got, err := shell.Run(t.Context(), shell.Options{
				Command:     fmt.Sprintf("yes '%s' | head -c %d", strings.TrimSuffix(line, "\n"), total),
				OutputLimit: limit,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !got.Truncated {
				t.Error("Truncated = false, want true")
			}
			if !utf8.ValidString(got.Output) || strings.ContainsRune(got.Output, utf8.RuneError) {
				t.Errorf("Output is not clean UTF-8: %q", got.Output)
			}
			// The expected output, built from the stream by other means:
			// ToValidUTF8 with no replacement drops the partial rune at
			// each seam, the stream being valid elsewhere.
			stream := strings.Repeat(line, total/len(line))
			head := strings.ToValidUTF8(stream[:limit/2], "")
			tail := strings.ToValidUTF8(stream[len(stream)-(limit-limit/2):], "")
			want := head
			if !strings.HasSuffix(head, "\n") {
				want += "\n"
			}
			want += fmt.Sprintf("[... %d bytes of output omitted ...]\n", total-len(head)-len(tail)) + tail
			if diff := cmp.Diff(want, got.Output); diff != "" {
				t.Errorf("Output (-want +got):\n%s", diff)
			}
		})
	}
}

// Not parallel: it counts the process's goroutines.
func TestRun_NoGoroutineLeak(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	runs := []struct {
		ctx  context.Context
		opts shell.Options
	}{
		{t.Context(), shell.Options{Command: "echo hi"}},
		{t.Context(), shell.Options{Command: "sleep 30", Timeout: 100 * time.Millisecond}},
		{ctx, shell.Options{Command: "sleep 30"}},
		{t.Context(), shell.Options{Command: "trap '' HUP; sleep 30 & echo done"}},
		{t.Context(), shell.Options{Command: "true", Dir: filepath.Join(t.TempDir(), "missing")}},
	}
	before := runtime.NumGoroutine()
	for _, r := range runs {
		_, _ = shell.Run(r.ctx, r.opts)
	}
	cancel() // the context's own timer goroutine, if it fired, is gone after this
	// A goroutine that has closed the channel Run waits for may not have
	// returned yet: give it a moment. A leaked one stays.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if after > before {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

func readPID(t *testing.T, dir string) int {
	t.Helper()
	return testkit.ReadPID(t, filepath.Join(dir, "pid"))
}

// waitGone fails unless pid is gone. A killed process closes its files before
// it becomes a zombie, so Run may return a moment before /proc shows it dead;
// the poll covers that moment only.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !testkit.Gone(pid) {
		if time.Now().After(deadline) {
			t.Errorf("process %d is still running after Run returned", pid)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
