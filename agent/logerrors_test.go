package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// What the editor is told when a session log fails, from stateDir alone:
// the log's own failure names the file and what to do, never a provider.
func TestStateDir_Errors(t *testing.T) {
	d := stateDir{path: "/state", help: "state_dir in the config file chose /state"}
	write := func(cause error) error {
		return fmt.Errorf("record: %w", &session.WriteError{Op: "write", Path: "/state/s.jsonl", Err: cause})
	}
	tests := []struct {
		name   string
		err    error
		open   bool // through openError
		code   int
		reason string
		says   []string
		lacks  string // a message it must not hold
	}{
		{name: "disk full", err: write(syscall.ENOSPC), code: acp.CodeInternalError, reason: "session_log_write",
			says: []string{"/state/s.jsonl", "free disk space and try again", "recovers with the next prompt"}},
		{name: "not writable", err: write(fs.ErrPermission), code: acp.CodeInternalError, reason: "session_log_write",
			says: []string{"state_dir in the config file chose /state"}, lacks: "check the disk"},
		{name: "other write failure", err: write(errors.New("io error")), code: acp.CodeInternalError, reason: "session_log_write",
			says: []string{"check the disk and try again; state_dir in the config file chose /state"}},
		{name: "refused by the log's rules", err: errors.New("turn 2 has no turn/start"), code: acp.CodeInternalError, reason: "session_log",
			says: []string{"could not record this in its session log"}},
		{name: "locked", err: &session.LockedError{SessionID: "s", Path: "/state/s.jsonl", PID: 42}, open: true, code: acp.CodeSessionBusy,
			reason: "session_locked", says: []string{"in use in another Rebound process (pid 42)"}},
		{name: "a write failure on open", err: write(syscall.ENOSPC), open: true, code: acp.CodeInternalError, reason: "session_log_write",
			says: []string{"free disk space"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.open {
				err = d.openError("s", tt.err)
			} else {
				err = d.logError("s", tt.err)
			}
			re, ok := errors.AsType[*acp.RequestError](err)
			if !ok || re.Code != tt.code {
				t.Fatalf("error %v, want a request error with code %d", err, tt.code)
			}
			if data, _ := re.Data.(map[string]any); data["reason"] != tt.reason {
				t.Errorf("reason %v, want %s", data["reason"], tt.reason)
			}
			if tt.lacks != "" && strings.Contains(re.Message, tt.lacks) {
				t.Errorf("message %q says %q", re.Message, tt.lacks)
			}
			for _, s := range tt.says {
				if !strings.Contains(re.Message, s) {
					t.Errorf("message %q does not say %q", re.Message, s)
				}
			}
		})
	}
	if err := d.openError("s", session.ErrNotFound); !strings.Contains(err.Error(), "s") {
		t.Errorf("openError of a missing log = %v", err)
	} else if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code == acp.CodeInternalError {
		t.Errorf("openError of a missing log = %v, want session not found", err)
	}
	if got := (stateDir{path: "/x"}).stateDirHelp(); !strings.Contains(got, "/x") || !strings.Contains(got, "--state-dir") {
		t.Errorf("help without Config.StateDirHelp = %q, want every place the directory is set", got)
	}
}
