package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// stateDir is where the session logs are, and what the editor is told
// when a log there can't be created, opened or written: the one place a
// failure of the session log becomes a JSON-RPC error.
type stateDir struct {
	path string
	// help is Config.StateDirHelp: where the path came from.
	help string
}

// openError is what the editor is told when a session's log can't be
// opened.
func (d stateDir) openError(id string, err error) error {
	if errors.Is(err, session.ErrNotFound) {
		return acp.NewSessionNotFound(id)
	}
	if le, ok := errors.AsType[*session.LockedError](err); ok {
		msg := "Session " + id + " is in use in another Rebound process"
		if le.PID > 0 {
			msg += fmt.Sprintf(" (pid %d)", le.PID)
		}
		msg += ", perhaps in another editor window: a turn is running there; try again once it has finished, or cancel it there"
		data := map[string]any{"sessionId": id, "reason": "session_locked", "path": le.Path}
		if le.PID > 0 {
			data["pid"] = le.PID
		}
		return &acp.RequestError{Code: acp.CodeSessionBusy, Message: msg + ".", Data: data, Err: err}
	}
	if _, ok := errors.AsType[*session.WriteError](err); ok {
		return d.logError(id, err)
	}
	return fmt.Errorf("open session %s: %w", id, err)
}

// stateDirHelp says where the state directory came from and what to do
// about it: config.Config.StateDirHelp when the agent was given it (it
// names the one source the user chose, or the default), else every place
// it can be set.
func (d stateDir) stateDirHelp() string {
	if d.help != "" {
		return d.help
	}
	return "the state directory " + d.path + " is set by --state-dir, REBOUND_STATE_DIR or state_dir in the config file: make it writable, or choose another"
}

// createError is what the editor is told when a new session's log can't be
// created: the setting that chose the directory, and what to do.
func (d stateDir) createError(err error) error {
	we, ok := errors.AsType[*session.WriteError](err)
	if !ok {
		return fmt.Errorf("create session log: %w", err)
	}
	advice := d.stateDirHelp() + "."
	if specific := writeAdvice(err); specific != "" && !notWritable(err) {
		advice = specific + " (" + d.stateDirHelp() + ")."
	}
	return &acp.RequestError{Code: acp.CodeInternalError, Message: we.Error() + "; " + advice, Err: err,
		Data: map[string]any{"reason": "session_log_create", "path": we.Path, "stateDir": d.path}}
}

// logError is what the editor is told when the session log fails: a write
// that failed (a full disk) is Rebound's own failure, named with its path
// and what to do, and never a provider's. Other log errors are internal.
func (d stateDir) logError(id string, err error) error {
	if re, ok := errors.AsType[*acp.RequestError](err); ok {
		return re
	}
	we, ok := errors.AsType[*session.WriteError](err)
	if !ok {
		return &acp.RequestError{Code: acp.CodeInternalError, Message: "Rebound could not record this in its session log: " + err.Error(), Err: err,
			Data: map[string]any{"sessionId": id, "reason": "session_log"}}
	}
	advice := writeAdvice(err)
	switch {
	case notWritable(err):
		advice = d.stateDirHelp()
	case advice == "":
		advice = "check the disk and try again; " + d.stateDirHelp()
	}
	return &acp.RequestError{Code: acp.CodeInternalError, Message: we.Error() + "; " + advice + "; the session recovers with the next prompt.", Err: err,
		Data: map[string]any{"sessionId": id, "reason": "session_log_write", "path": we.Path}}
}

// writeAdvice says what to do about a failed write, when the cause says.
func writeAdvice(err error) string {
	switch {
	case diskFull(err):
		return "free disk space and try again"
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		return "Rebound has too many files open: raise the open-file limit (ulimit -n) it is started with, or close other programs, and try again"
	}
	return ""
}

func notWritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// exists reports a session this process does not hold as not found unless
// its log is on disk.
func (d stateDir) exists(id string) error {
	_, err := os.Stat(session.Path(d.path, id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return acp.NewSessionNotFound(id)
	case err != nil:
		return fmt.Errorf("session %s: %w", id, err)
	}
	return nil
}
