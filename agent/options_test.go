package agent

import (
	"testing"

	"github.com/rebound-agent/rebound/session"
)

// The configuration menu alone: what a log's records make of a session's
// options, a value the log holds that is not one of the menu's falling
// back to the default.
func TestConfigMenu_FromLog(t *testing.T) {
	m := &configMenu{mode: ModeAcceptEdits, model: "m", effort: "low"}
	ev := func(typ string, data any) session.Event { return session.Event{Type: typ, Data: mustJSON(data)} }
	tests := []struct {
		name   string
		events []session.Event
		want   options
	}{
		{name: "nothing recorded", want: options{mode: ModeAcceptEdits, model: "m", thought: "low"}},
		{name: "the last of each", events: []session.Event{
			ev(session.TypeMode, session.Mode{Mode: ModeReadOnly}),
			ev(session.TypeConfig, session.Config{ConfigID: ModelConfigID, Value: "a"}),
			ev(session.TypeConfig, session.Config{ConfigID: ThoughtConfigID, Value: "high"}),
			ev(session.TypeMode, session.Mode{Mode: ModeAsk}),
			ev(session.TypeConfig, session.Config{ConfigID: ModelConfigID, Value: "b"}),
		}, want: options{mode: ModeAsk, model: "b", thought: "high"}},
		{name: "values not offered", events: []session.Event{
			ev(session.TypeMode, session.Mode{Mode: "yolo"}),
			ev(session.TypeConfig, session.Config{ConfigID: ThoughtConfigID, Value: "extreme"}),
			ev(session.TypeConfig, session.Config{ConfigID: ModelConfigID, Value: ""}),
		}, want: options{mode: ModeAcceptEdits, model: "m", thought: "low"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.fromLog(tt.events); got != tt.want {
				t.Errorf("fromLog = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := (&configMenu{}).defaults(); got.mode != DefaultMode || got.thought != ThoughtDefault {
		t.Errorf("defaults of an empty configuration = %+v, want mode %s, thought %s", got, DefaultMode, ThoughtDefault)
	}
}
