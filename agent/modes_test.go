package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/session"
	"github.com/rs/zerolog"
)

// askingClient counts permission requests and fails them, so permit never
// needs the session log: a failed request is a result, not a record.
type askingClient struct {
	acp.Client
	asked int
}

func (c *askingClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.asked++
	return acp.RequestPermissionResponse{}, errors.New("no editor in this test")
}

func TestPermit_PerMode(t *testing.T) {
	edit := session.MessageToolCall{ID: "call_1", Name: tools.EditFile}
	run := session.MessageToolCall{ID: "call_2", Name: tools.RunCommand}
	cmd := commandScope("make test", "/w")
	const git = "it is inside .git"
	tests := []struct {
		mode    string
		call    session.MessageToolCall
		scope   string
		rules   map[string]string
		protect string
		wantOK  bool
		asks    bool
		outputs string // in the result when not ok
	}{
		{ModeAsk, edit, scopeEdits, nil, "", false, true, "could not be asked"},
		{ModeAsk, run, cmd, nil, "", false, true, "could not be asked"},
		{ModeAsk, run, cmd, map[string]string{cmd: session.AllowAlways}, "", true, false, ""},
		{ModeAcceptEdits, edit, scopeEdits, nil, "", true, false, ""},
		{ModeAcceptEdits, run, cmd, nil, "", false, true, "could not be asked"},
		{ModeFullAccess, edit, scopeEdits, nil, "", true, false, ""},
		{ModeFullAccess, run, cmd, nil, "", true, false, ""},
		// An explicit "always reject" still holds when nothing asks.
		{ModeFullAccess, run, cmd, map[string]string{cmd: session.RejectAlways}, "", false, false, "declined this command"},
		{ModeAcceptEdits, edit, scopeEdits, map[string]string{scopeEdits: session.RejectAlways}, "", false, false, "declined all edits"},
		// read_only refuses even what a standing answer allows.
		{ModeReadOnly, edit, scopeEdits, map[string]string{scopeEdits: session.AllowAlways}, "", false, false, "read-only"},
		{ModeReadOnly, run, cmd, nil, "", false, false, "read-only"},
		// A protected write asks in every mode but full_access, whatever
		// was answered before for edits.
		{ModeAcceptEdits, edit, scopeEdits, nil, git, false, true, "could not be asked"},
		{ModeAsk, edit, scopeEdits, map[string]string{scopeEdits: session.AllowAlways}, git, false, true, "could not be asked"},
		{ModeFullAccess, edit, scopeEdits, nil, git, true, false, ""},
		{ModeAcceptEdits, edit, scopeEdits, map[string]string{scopeEdits: session.RejectAlways}, git, false, false, "declined all edits"},
		{ModeReadOnly, edit, scopeEdits, nil, git, false, false, "read-only"},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.scope+"/"+tt.protect, func(t *testing.T) {
			c := &askingClient{}
			rules := tt.rules
			if rules == nil {
				rules = map[string]string{}
			}
			nop := zerolog.Nop()
			gate := &permissionGate{asker: c, sessionID: "sess_test", turn: 1, mode: func() string { return tt.mode },
				rules: func() map[string]string { return rules }, log: &nop,
				record: func(string, any) error { panic("a failed request is not recorded") }}
			ok, out, err := gate.permit(context.Background(), tt.call, tools.Info{Title: "t", Kind: "edit"}, approval{scope: tt.scope, protected: tt.protect})
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.wantOK || (c.asked > 0) != tt.asks {
				t.Fatalf("permit in %s: ok=%v asked=%d, want ok=%v asks=%v", tt.mode, ok, c.asked, tt.wantOK, tt.asks)
			}
			if !ok && !strings.Contains(out.output, tt.outputs) {
				t.Errorf("result %q does not say %q", out.output, tt.outputs)
			}
			if !ok && out.status != session.ToolFailed {
				t.Errorf("status %q, want failed", out.status)
			}
		})
	}
}

func TestModeDecision(t *testing.T) {
	cmd := commandScope("ls", "/w")
	want := map[string][2]decision{ // edits, command
		ModeAsk:         {askUser, askUser},
		ModeAcceptEdits: {allow, askUser},
		ModeReadOnly:    {refuse, refuse},
		ModeFullAccess:  {allow, allow},
	}
	for _, m := range Modes {
		w, ok := want[m.ID]
		if !ok {
			t.Fatalf("mode %s has no expectation", m.ID)
		}
		if got := [2]decision{modeDecision(m.ID, scopeEdits), modeDecision(m.ID, cmd)}; got != w {
			t.Errorf("%s: got %v, want %v", m.ID, got, w)
		}
	}
}

func TestToolsFor_ReadOnlyOffersOnlyReading(t *testing.T) {
	names := func(mode string) []string {
		var n []string
		for _, d := range toolsFor(mode) {
			n = append(n, d.Name)
		}
		return n
	}
	if got, want := names(ModeReadOnly), []string{tools.ReadFile, tools.FindFiles, tools.SearchFiles, tools.UpdatePlan}; !slices.Equal(got, want) {
		t.Errorf("read_only offers %v, want %v", got, want)
	}
	for _, m := range []string{ModeAsk, ModeAcceptEdits, ModeFullAccess} {
		if got := names(m); len(got) != 7 {
			t.Errorf("%s offers %v, want all seven", m, got)
		}
	}
	// The shared definitions are not changed by filtering.
	if len(tools.Definitions()) != 7 {
		t.Fatal("toolsFor changed tools.Definitions")
	}
}

func TestReadOnlyDispatch_RefusesMutatingCalls(t *testing.T) {
	tr, _ := testRunner(&askingClient{}, tools.NewWorkspace(t.TempDir()), ModeReadOnly, nil)
	for _, call := range []session.MessageToolCall{
		{ID: "1", Name: tools.WriteFile, Arguments: `{"path":"a.txt","content":"x"}`},
		{ID: "2", Name: tools.EditFile, Arguments: `{"path":"a.txt","old_text":"x","new_text":"y"}`},
		{ID: "3", Name: tools.RunCommand, Arguments: `{"command":"touch a.txt"}`},
	} {
		args, err := tools.Parse(call.Name, call.Arguments)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tr.dispatch(context.Background(), call, tools.Info{}, args)
		if err != nil || out.status != session.ToolFailed || !strings.Contains(out.output, "read-only") {
			t.Errorf("%s in read_only: %+v, %v", call.Name, out, err)
		}
	}
}

func TestValidMode(t *testing.T) {
	for _, m := range Modes {
		if !ValidMode(m.ID) || m.Name == "" || m.Description == "" {
			t.Errorf("mode %+v", m)
		}
	}
	if ValidMode("") || ValidMode("yolo") {
		t.Error("unknown modes are valid")
	}
}
