package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// The ids of the session's configuration options besides ModeConfigID.
const (
	ModelConfigID   = "model"
	ThoughtConfigID = "thought_level"
)

// ThoughtDefault is the thought level that sends no reasoning effort: the
// provider decides.
const ThoughtDefault = "default"

// ReasoningEfforts are the reasoning efforts a session may ask of a model
// that takes one.
var ReasoningEfforts = []string{"low", "medium", "high"}

// configIDs are the options in the order they are listed and recorded.
var configIDs = []string{ModeConfigID, ModelConfigID, ThoughtConfigID}

// options are a session's configuration. A change applies from the next
// model request.
type options struct {
	mode    string
	model   string
	thought string // ThoughtDefault or one of ReasoningEfforts
}

func (o *options) field(id string) *string {
	switch id {
	case ModeConfigID:
		return &o.mode
	case ModelConfigID:
		return &o.model
	case ThoughtConfigID:
		return &o.thought
	}
	panic("unknown configuration option " + id)
}

// configMenu is what a session's configuration options offer, and what
// they are when nobody chose: from the configuration, and the provider's
// models (catalog).
type configMenu struct {
	mode   string // Config.DefaultMode: "" is DefaultMode
	model  string // Config.Model
	effort string // Config.ReasoningEffort: "" lets the provider decide
	models *catalog
	// override is the model set up at sign-in, instead of model (signin.go).
	override *modelOverride
}

// defaults are the options of a session nobody configured.
func (m *configMenu) defaults() options {
	return options{mode: cmp.Or(m.mode, DefaultMode), model: m.override.or(m.model), thought: cmp.Or(m.effort, ThoughtDefault)}
}

func validThought(v string) bool { return v == ThoughtDefault || slices.Contains(ReasoningEfforts, v) }

// offersThought reports whether requests to model may carry a reasoning
// effort: go-openai knows it takes one, or the user said so by configuring
// provider.reasoning_effort.
func (m *configMenu) offersThought(model string) bool {
	return m.effort != "" || llm.TakesReasoningEffort(model)
}

// reasoningEffort is the reasoning effort a request to model carries for thought.
func (m *configMenu) reasoningEffort(model, thought string) string {
	if thought == ThoughtDefault || !m.offersThought(model) {
		return ""
	}
	return thought
}

// current is the session's configuration now.
func (s *sessionState) current() options { return s.options.current() }

// currentMode is the session's mode now.
func (s *sessionState) currentMode() string { return s.current().mode }

// fromLog are the options a session's log records (the last
// session/mode, the last session/config of each), else the defaults.
func (m *configMenu) fromLog(events []session.Event) options {
	var o options
	d := m.defaults()
	o.mode = session.LastMode(events)
	if !ValidMode(o.mode) {
		o.mode = d.mode
	}
	o.model, _ = session.LastConfig(events, ModelConfigID)
	o.model = cmp.Or(o.model, d.model)
	o.thought, _ = session.LastConfig(events, ThoughtConfigID)
	if !validThought(o.thought) {
		o.thought = d.thought
	}
	return o
}

// sessionConfig is what session/new, load and resume answer about the
// session's modes and configuration options. The model choices are those
// known now: the editor waits for this answer, not for the provider's
// model list, which follows in an update if it was not current.
func (m *configMenu) sessionConfig(s *sessionState) (*acp.SessionModeState, []acp.ConfigOption) {
	o := s.current()
	return modeState(o.mode), m.optionsWith(o, m.models.answerChoices(s, o.model))
}

// configOptions is the full list of the session's configuration options,
// with the provider's model list (waiting for it if it is not current).
func (m *configMenu) configOptions(ctx context.Context, o options) []acp.ConfigOption {
	return m.optionsWith(o, m.models.modelChoices(ctx, o.model))
}

// optionsWith is the full list of the session's configuration options,
// models offering the given choices: the mode, the model and, for a model
// that takes one, the reasoning effort.
func (m *configMenu) optionsWith(o options, models []string) []acp.ConfigOption {
	modes := make([]acp.ConfigOptionChoice, len(Modes))
	for i, md := range Modes {
		modes[i] = acp.ConfigOptionChoice{Value: md.ID, Name: md.Name, Description: md.Description}
	}
	modelChoices := make([]acp.ConfigOptionChoice, len(models))
	for i, id := range models {
		modelChoices[i] = acp.ConfigOptionChoice{Value: id, Name: id}
	}
	opts := []acp.ConfigOption{{
		ID: ModeConfigID, Name: "Mode", Description: "What Rebound may do without asking.",
		Category: "mode", Type: acp.ConfigOptionSelect, CurrentValue: o.mode, Options: modes,
	}, {
		ID: ModelConfigID, Name: "Model", Description: "The model Rebound asks, from the next request on.",
		Category: "model", Type: acp.ConfigOptionSelect, CurrentValue: o.model, Options: modelChoices,
	}}
	if m.offersThought(o.model) {
		opts = append(opts, acp.ConfigOption{
			ID: ThoughtConfigID, Name: "Reasoning effort", Description: "How hard the model thinks before it answers.",
			Category: "thought_level", Type: acp.ConfigOptionSelect, CurrentValue: o.thought, Options: thoughtChoices(),
		})
	}
	return opts
}

func thoughtChoices() []acp.ConfigOptionChoice {
	out := []acp.ConfigOptionChoice{{Value: ThoughtDefault, Name: "Provider default", Description: "Sends no reasoning effort: the provider decides."}}
	for _, e := range ReasoningEfforts {
		out = append(out, acp.ConfigOptionChoice{Value: e, Name: strings.ToUpper(e[:1]) + e[1:]})
	}
	return out
}

// choices are the values option id may take for a session in o.
func (m *configMenu) choices(ctx context.Context, id string, o options) []string {
	switch id {
	case ModeConfigID:
		return modeIDs()
	case ModelConfigID:
		return m.models.modelChoices(ctx, o.model)
	}
	return append([]string{ThoughtDefault}, ReasoningEfforts...)
}

// SetSessionMode serves session/set_mode. The editor asked in terms of
// modes; its view of the configuration options is told with a
// config_option_update.
func (a *Agent) SetSessionMode(ctx context.Context, req acp.SetSessionModeRequest, c acp.Client) (acp.SetSessionModeResponse, error) {
	if !ValidMode(req.ModeID) {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams("modeId %s is not a mode of Rebound's; the modes are %s", quote(req.ModeID), ModeIDs())
	}
	s, err := a.session(req.SessionID)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	changed, err := a.store.setOption(ctx, s, ModeConfigID, req.ModeID)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	if changed {
		a.notifyOptions(ctx, c, s.id, acp.ConfigOptionUpdate(a.menu.configOptions(ctx, s.current())))
	}
	return acp.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption serves session/set_config_option and answers with
// every option, as the editor replaces its view with them. A change of the
// mode is also told in terms of modes, with a current_mode_update.
func (a *Agent) SetSessionConfigOption(ctx context.Context, req acp.SetSessionConfigOptionRequest, c acp.Client) (acp.SetSessionConfigOptionResponse, error) {
	if !slices.Contains(configIDs, req.ConfigID) {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("configId %s is not a configuration option of Rebound's; the options are %s", quote(req.ConfigID), strings.Join(configIDs, ", "))
	}
	s, err := a.session(req.SessionID)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	o := s.current()
	if req.ConfigID == ThoughtConfigID && !a.menu.offersThought(o.model) {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("%s is not offered for model %s, which Rebound does not know to take a reasoning effort; set provider.reasoning_effort in the configuration if it does", ThoughtConfigID, quote(o.model))
	}
	vals := a.menu.choices(ctx, req.ConfigID, o)
	var value string
	if req.Type == "boolean" || json.Unmarshal(req.Value, &value) != nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("%s is a select option: its value is one of %s", req.ConfigID, listSome(vals, 20))
	}
	if !slices.Contains(vals, value) {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("value %s is not a value of %s; the values are %s", quote(value), req.ConfigID, listSome(vals, 20))
	}
	changed, err := a.store.setOption(ctx, s, req.ConfigID, value)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	if changed && req.ConfigID == ModeConfigID {
		a.notifyOptions(ctx, c, s.id, acp.CurrentModeUpdate(value))
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: a.menu.configOptions(ctx, s.current())}, nil
}

// listSome lists up to n of vals for a message.
func listSome(vals []string, n int) string {
	if len(vals) <= n {
		return strings.Join(vals, ", ")
	}
	return fmt.Sprintf("%s, … (%d in all)", strings.Join(vals[:n], ", "), len(vals))
}

func (a *Agent) notifyOptions(ctx context.Context, c acp.Client, id string, u acp.SessionUpdate) {
	a.notify(ctx, c, id, u, "could not send the session's configuration")
}

// setOption makes value the session's option id, all or nothing: its
// record is written to the log and synced, under the log's lock, and only
// then does the session use it. A change refused (another process is
// writing the session: -32003) or not written changes nothing here or on
// disk. While a turn of this process holds the log, the record is written
// through it and applies from the turn's next model request; while a load
// or resume of this process runs, the change waits for it to end. Other
// processes see the change at their next use of the session.
func (st *sessionStore) setOption(ctx context.Context, s *sessionState, id, value string) (changed bool, err error) {
	acquire := func() error {
		if err := st.held(s); err != nil { // while this waited
			s.unlockTurn()
			return err
		}
		if err := st.acquire(s, true); err != nil {
			s.unlockTurn()
			return err
		}
		return nil
	}
	write := func(id, value string) (pendingEvent, error) {
		p, err := st.writeOption(s, id, value)
		if err != nil {
			return p, st.dir.logError(s.id, fmt.Errorf("record the session's %s: %w", id, err))
		}
		return p, nil
	}
	// The log was read under the lock: what another process chose is
	// known, so a value already recorded is not written again.
	changed, own, err := s.options.set(ctx, id, value, s.turnMu.TryLock, acquire, write)
	if own {
		st.done(s)
	}
	if err != nil {
		return false, err
	}
	if changed {
		st.log.Info().Str("session", s.id).Str("option", id).Str("value", value).Msg("session configuration changed")
	}
	return changed, nil
}

// writeOption writes option id's record through the writer and syncs it
// (optionWriter.set then makes value the session's).
func (st *sessionStore) writeOption(s *sessionState, id, value string) (pendingEvent, error) {
	typ, data := session.TypeConfig, any(session.Config{ConfigID: id, Value: value})
	if id == ModeConfigID {
		typ, data = session.TypeMode, session.Mode{Mode: value}
	}
	st.mu.Lock()
	l := s.log
	st.mu.Unlock()
	if l == nil {
		return pendingEvent{}, errAgentClosed
	}
	ev, err := l.AppendSync(typ, data)
	if err != nil {
		return pendingEvent{}, &recordError{err}
	}
	return pendingEvent{ev, data}, nil
}
