package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/llm"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/session"
)

// Session modes: what the model is offered and which of its calls ask
// permission first.
const (
	// ModeAsk asks before every edit, write and command.
	ModeAsk = "ask"
	// ModeAcceptEdits edits and writes without asking; commands ask.
	ModeAcceptEdits = "accept_edits"
	// ModeReadOnly offers only the tools that read; a call to another is
	// refused.
	ModeReadOnly = "read_only"
	// ModeFullAccess asks for nothing.
	ModeFullAccess = "full_access"
)

// DefaultMode is the mode of a session nobody chose one for, unless
// agent.default_mode says otherwise.
const DefaultMode = ModeAsk

// ModeConfigID is the id of the configuration option that is the session's
// mode.
const ModeConfigID = "mode"

// Modes are the session modes, in the order an editor lists them.
var Modes = []acp.SessionMode{
	{ID: ModeAsk, Name: "Ask", Description: "Asks before every edit, file write and command."},
	{ID: ModeAcceptEdits, Name: "Accept edits", Description: "Edits and writes files without asking; asks before commands."},
	{ID: ModeReadOnly, Name: "Read only", Description: "Reads and searches only: no edits, file writes or commands."},
	{ID: ModeFullAccess, Name: "Full access", Description: "Edits, writes files and runs commands without asking."},
}

// ValidMode reports whether id is one of Modes.
func ValidMode(id string) bool {
	return slices.ContainsFunc(Modes, func(m acp.SessionMode) bool { return m.ID == id })
}

// ModeIDs lists the ids of Modes, comma-separated, for messages.
func ModeIDs() string {
	ids := make([]string, len(Modes))
	for i, m := range Modes {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}

// mutating are the tools read_only leaves out of the request.
var mutating = []string{tools.WriteFile, tools.EditFile, tools.RunCommand}

// toolsFor are the tool definitions a request in mode offers.
func toolsFor(mode string) []llm.ToolDef {
	defs := tools.Definitions()
	if mode != ModeReadOnly {
		return defs
	}
	return slices.DeleteFunc(defs, func(d llm.ToolDef) bool { return slices.Contains(mutating, d.Name) })
}

// decision is what a session's mode says about a call that changes
// something, before any standing answer of the user's is consulted.
type decision int

const (
	askUser decision = iota // ask, unless a standing answer covers it
	allow                   // go ahead without asking (a standing rejection still holds)
	refuse                  // the session is read-only
)

// modeDecision is what mode decides for a call needing permission in scope
// (scopeEdits, or a command's).
func modeDecision(mode, scope string) decision {
	switch mode {
	case ModeFullAccess:
		return allow
	case ModeAcceptEdits:
		if scope == scopeEdits {
			return allow
		}
	case ModeReadOnly:
		return refuse
	}
	return askUser
}

// readOnlyOutput is the result of a call the read-only mode refuses.
func readOnlyOutput(tool string) toolOutcome {
	return declined(fmt.Sprintf("This session is read-only: %s was not run. Only read_file, find_files and search_files can be used; to change files or run commands, ask the user to switch the session to another mode.", tool),
		"Not run: the session is read-only")
}

func (a *Agent) defaultMode() string { return cmp.Or(a.cfg.DefaultMode, DefaultMode) }

// modeState is the session's mode as session/new, load and resume answer
// it.
func modeState(mode string) *acp.SessionModeState {
	return &acp.SessionModeState{CurrentModeID: mode, AvailableModes: slices.Clone(Modes)}
}

// configOptions is the full list of the session's configuration options.
func configOptions(mode string) []acp.ConfigOption {
	choices := make([]acp.ConfigOptionChoice, len(Modes))
	for i, m := range Modes {
		choices[i] = acp.ConfigOptionChoice{Value: m.ID, Name: m.Name, Description: m.Description}
	}
	return []acp.ConfigOption{{
		ID: ModeConfigID, Name: "Mode", Description: "What Rebound may do without asking.",
		Category: "mode", Type: acp.ConfigOptionSelect, CurrentValue: mode, Options: choices,
	}}
}

// currentMode is the session's mode now.
func (s *sessionState) currentMode() string {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	return s.mode
}

// loadMode takes the session's mode from its log (the last session/mode),
// else the default, unless a change made in this process is still to be
// recorded. Called with the log open, under turnMu.
func (a *Agent) loadMode(s *sessionState) {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	if s.modeUnrecorded {
		return
	}
	m := session.LastMode(s.events)
	if !ValidMode(m) {
		m = a.defaultMode()
	}
	s.mode = m
}

// recordModeLocked writes a mode change not yet in the log. Called under
// modeMu and turnMu, with the log open.
func (s *sessionState) recordModeLocked() error {
	if !s.modeUnrecorded {
		return nil
	}
	if _, err := s.appendSync(session.TypeMode, session.Mode{Mode: s.mode}); err != nil {
		return err
	}
	s.modeUnrecorded = false
	return nil
}

// flushMode records a mode change made while the caller held the session:
// a turn calls it before each step.
func (s *sessionState) flushMode() error {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	return s.recordModeLocked()
}

// done ends a use of s begun with turnMu and a successful acquire: a mode
// change made meanwhile is recorded, then the log is released and turnMu
// unlocked. modeMu is held from the check to the unlock, so a change made
// concurrently is either seen here or finds turnMu free and records itself.
func (a *Agent) done(s *sessionState) error {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	err := s.recordModeLocked()
	if err != nil {
		a.cfg.Logger.Warn().Err(err).Str("session", s.id).Msg("could not record the session's mode")
	}
	a.release(s)
	s.turnMu.Unlock()
	return err
}

// setMode makes mode the session's mode. When the session is idle the
// change is recorded before this returns; while a turn, load or resume
// holds it, the change applies from the turn's next step and the holder
// records it.
func (a *Agent) setMode(s *sessionState, mode string) (changed bool, err error) {
	s.modeMu.Lock()
	if s.mode == mode {
		s.modeMu.Unlock()
		return false, nil
	}
	s.mode, s.modeUnrecorded = mode, true
	idle := s.turnMu.TryLock()
	s.modeMu.Unlock()
	if !idle {
		a.cfg.Logger.Info().Str("session", s.id).Str("mode", mode).Msg("session mode changed during a turn")
		return true, nil
	}
	if err := a.acquire(s); err != nil {
		s.turnMu.Unlock()
		return true, err
	}
	if err := a.done(s); err != nil {
		return true, a.logError(s.id, err)
	}
	a.cfg.Logger.Info().Str("session", s.id).Str("mode", mode).Msg("session mode changed")
	return true, nil
}

// SetSessionMode serves session/set_mode. The editor asked in terms of
// modes; its view of the configuration options is told with a
// config_option_update.
func (a *Agent) SetSessionMode(ctx context.Context, req acp.SetSessionModeRequest, c acp.Client) (acp.SetSessionModeResponse, error) {
	if !ValidMode(req.ModeID) {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams("modeId %s is not a mode of Rebound's; the modes are %s", quote(req.ModeID), ModeIDs())
	}
	s, err := a.lookup(req.SessionID)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	changed, err := a.setMode(s, req.ModeID)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	if changed {
		a.notifyMode(ctx, c, s.id, acp.SessionUpdate{SessionUpdate: acp.UpdateConfigOption, ConfigOptions: configOptions(req.ModeID)})
	}
	return acp.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption serves session/set_config_option: mode is the one
// option. The editor asked in terms of options; its view of the modes is
// told with a current_mode_update.
func (a *Agent) SetSessionConfigOption(ctx context.Context, req acp.SetSessionConfigOptionRequest, c acp.Client) (acp.SetSessionConfigOptionResponse, error) {
	if req.ConfigID != ModeConfigID {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("configId %s is not a configuration option of Rebound's; the options are %s", quote(req.ConfigID), ModeConfigID)
	}
	var mode string
	if req.Type == "boolean" || json.Unmarshal(req.Value, &mode) != nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("%s is a select option: its value is one of %s", ModeConfigID, ModeIDs())
	}
	if !ValidMode(mode) {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("value %s is not a value of %s; the values are %s", quote(mode), ModeConfigID, ModeIDs())
	}
	s, err := a.lookup(req.SessionID)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	changed, err := a.setMode(s, mode)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	if changed {
		a.notifyMode(ctx, c, s.id, acp.SessionUpdate{SessionUpdate: acp.UpdateCurrentMode, CurrentModeID: mode})
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: configOptions(mode)}, nil
}

func (a *Agent) notifyMode(ctx context.Context, c acp.Client, id string, u acp.SessionUpdate) {
	if err := c.Update(context.WithoutCancel(ctx), id, u); err != nil {
		a.cfg.Logger.Debug().Err(err).Str("session", id).Msg("could not send the session's mode")
	}
}
