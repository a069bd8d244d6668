package shell_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/tools/shell"
)

func TestResult_Summary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    shell.Result
		want string
	}{
		{"exit zero", shell.Result{Output: "hi\n", ExitCode: new(0)}, "hi\n[exit code 0]"},
		{"exit non-zero without final newline", shell.Result{Output: "oops", ExitCode: new(2)}, "oops\n[exit code 2]"},
		{"no output", shell.Result{ExitCode: new(0)}, "(no output)\n[exit code 0]"},
		{
			"timed out",
			shell.Result{Output: "partial\n", TimedOut: true, Signal: "SIGTERM", Timeout: 2 * time.Minute},
			"partial\n[timed out after 2m0s; the command and its children were killed]",
		},
		{
			"timed out without a known timeout",
			shell.Result{TimedOut: true},
			"(no output)\n[timed out; the command and its children were killed]",
		},
		{
			"cancelled",
			shell.Result{Output: "partial\n", Cancelled: true, Signal: "SIGTERM"},
			"partial\n[cancelled by the user; output so far above]",
		},
		{"cancelled before any output", shell.Result{Cancelled: true}, "(no output)\n[cancelled by the user]"},
		{"killed by a signal", shell.Result{Output: "x\n", Signal: "SIGSEGV"}, "x\n[killed by signal SIGSEGV]"},
		{"nothing known", shell.Result{}, "(no output)\n[exit status unknown]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.r.Summary()); diff != "" {
				t.Errorf("Summary() (-want +got):\n%s", diff)
			}
		})
	}
}
