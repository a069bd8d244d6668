package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

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

// optionSetter serves session/set_mode and session/set_config_option
// (Agent.SetSessionMode, SetSessionConfigOption): it checks the request
// against what menu offers, has set change the session's option, and tells
// the editor what changed.
type optionSetter struct {
	// session is the session the request names (reopener.session).
	session func(id string) (*sessionState, error)
	// set makes value the session's option id (optionRecorder.set).
	set  func(ctx context.Context, s *sessionState, id, value string) (changed bool, err error)
	menu *configMenu
	log  *zerolog.Logger
}

// setMode serves session/set_mode. The editor asked in terms of modes; its
// view of the configuration options is told with a config_option_update.
func (o optionSetter) setMode(ctx context.Context, req acp.SetSessionModeRequest, c acp.Client) error {
	if !ValidMode(req.ModeID) {
		return acp.NewInvalidParams("modeId %s is not a mode of Rebound's; the modes are %s", quote(req.ModeID), ModeIDs())
	}
	s, err := o.session(req.SessionID)
	if err != nil {
		return err
	}
	changed, err := o.set(ctx, s, ModeConfigID, req.ModeID)
	if err != nil {
		return err
	}
	if changed {
		notifyOptions(ctx, o.log, c, s.id, acp.ConfigOptionUpdate(o.menu.configOptions(ctx, s.current())))
	}
	return nil
}

// setConfigOption serves session/set_config_option and answers with every
// option, as the editor replaces its view with them. A change of the mode
// is also told in terms of modes, with a current_mode_update.
func (o optionSetter) setConfigOption(ctx context.Context, req acp.SetSessionConfigOptionRequest, c acp.Client) ([]acp.ConfigOption, error) {
	if !slices.Contains(configIDs, req.ConfigID) {
		return nil, acp.NewInvalidParams("configId %s is not a configuration option of Rebound's; the options are %s", quote(req.ConfigID), strings.Join(configIDs, ", "))
	}
	s, err := o.session(req.SessionID)
	if err != nil {
		return nil, err
	}
	cur := s.current()
	if req.ConfigID == ThoughtConfigID && !o.menu.offersThought(cur.model) {
		return nil, acp.NewInvalidParams("%s is not offered for model %s, which Rebound does not know to take a reasoning effort; set provider.reasoning_effort in the configuration if it does", ThoughtConfigID, quote(cur.model))
	}
	vals := o.menu.choices(ctx, req.ConfigID, cur)
	var value string
	if req.Type == "boolean" || json.Unmarshal(req.Value, &value) != nil {
		return nil, acp.NewInvalidParams("%s is a select option: its value is one of %s", req.ConfigID, listSome(vals, 20))
	}
	if !slices.Contains(vals, value) {
		return nil, acp.NewInvalidParams("value %s is not a value of %s; the values are %s", quote(value), req.ConfigID, listSome(vals, 20))
	}
	changed, err := o.set(ctx, s, req.ConfigID, value)
	if err != nil {
		return nil, err
	}
	if changed && req.ConfigID == ModeConfigID {
		notifyOptions(ctx, o.log, c, s.id, acp.CurrentModeUpdate(value))
	}
	return o.menu.configOptions(ctx, s.current()), nil
}

// listSome lists up to n of vals for a message.
func listSome(vals []string, n int) string {
	if len(vals) <= n {
		return strings.Join(vals, ", ")
	}
	return fmt.Sprintf("%s, … (%d in all)", strings.Join(vals[:n], ", "), len(vals))
}

// notifyOptions sends the editor a change of the session's options, best
// effort.
func notifyOptions(ctx context.Context, log *zerolog.Logger, c acp.Client, id string, u acp.SessionUpdate) {
	notify(ctx, log, c, id, u, "could not send the session's configuration")
}

// optionRecorder records a change of a session's options (optionSetter.set).
type optionRecorder struct {
	store optionUses
	dir   stateDir
	log   *zerolog.Logger
}

// optionUses is what changing an option needs of the sessions
// (sessionStore).
type optionUses interface {
	// held fails unless s is still the session held by its id.
	held(s *sessionState) error
	// acquire opens (or reads again) s's log for a use, under s.turnMu;
	// done ends the use and lets go of turnMu.
	acquire(s *sessionState, write bool) error
	done(s *sessionState)
	// whileOpen runs f under the store's lock unless the agent has closed.
	whileOpen(f func()) bool
}

// set makes value the session's option id, all or nothing: its
// record is written to the log and synced, under the log's lock, and only
// then does the session use it. A change refused (another process is
// writing the session: -32003) or not written changes nothing here or on
// disk. While a turn of this process holds the log, the record is written
// through it and applies from the turn's next model request; while a load
// or resume of this process runs, the change waits for it to end. Other
// processes see the change at their next use of the session.
func (w optionRecorder) set(ctx context.Context, s *sessionState, id, value string) (changed bool, err error) {
	st := w.store
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
		p, err := w.write(s, id, value)
		if err != nil {
			return p, w.dir.logError(s.id, fmt.Errorf("record the session's %s: %w", id, err))
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
		w.log.Info().Str("session", s.id).Str("option", id).Str("value", value).Msg("session configuration changed")
	}
	return changed, nil
}

// write writes option id's record through the writer and syncs it
// (optionWriter.set then makes value the session's).
func (w optionRecorder) write(s *sessionState, id, value string) (pendingEvent, error) {
	typ, data := session.TypeConfig, any(session.Config{ConfigID: id, Value: value})
	if id == ModeConfigID {
		typ, data = session.TypeMode, session.Mode{Mode: value}
	}
	var l *session.Log
	w.store.whileOpen(func() { l = s.log }) // set and cleared under the store's lock
	if l == nil {
		return pendingEvent{}, errAgentClosed
	}
	ev, err := l.AppendSync(typ, data)
	if err != nil {
		return pendingEvent{}, &recordError{err}
	}
	return pendingEvent{ev, data}, nil
}
