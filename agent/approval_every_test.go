package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/session"
	"github.com/rs/zerolog"
)

// scriptedAsker answers a permission request as told: an error, no
// selection, or the option id; cancel cancels the turn as it answers.
type scriptedAsker struct {
	err      error
	selected bool
	id       string
	cancel   context.CancelFunc
	asked    []acp.RequestPermissionRequest
}

func (a *scriptedAsker) RequestPermission(_ context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	a.asked = append(a.asked, req)
	if a.cancel != nil {
		a.cancel()
	}
	if a.err != nil {
		return acp.RequestPermissionResponse{}, a.err
	}
	if !a.selected {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionCancelled}}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionSelected, OptionID: a.id}}, nil
}

// permitRun is what one permit did: its result, the requests, the log
// and the standing answers after it.
type permitRun struct {
	ok       bool
	out      toolOutcome
	err      string
	asked    []acp.RequestPermissionRequest
	recorded []any
	rules    map[string]string
	logged   string
}

// TestPermit_EveryCase runs permit in every mode, scope, standing answer,
// protection and answer of the editor's (an error, none, each option and
// an option never offered; the turn cancelled as it answers; the log
// failing) and checks what must hold in each: what is asked shows what
// runs, nothing runs that no one allowed, an answer is recorded before it
// counts, and a protected write gets no standing answer.
func TestPermit_EveryCase(t *testing.T) {
	modes := []string{ModeAsk, ModeAcceptEdits, ModeReadOnly, ModeFullAccess, ""}
	scopes := []string{scopeEdits, "mcp:github/create_issue", commandScope("make", "/w")}
	standing := []string{"", session.AllowAlways, session.RejectAlways, session.AllowOnce}
	answers := []string{session.AllowOnce, session.AllowAlways, session.RejectOnce, session.RejectAlways, "", "other"}
	type answer struct {
		err            error
		selected       bool
		id             string
		cancel, recErr bool
	}
	var all []answer
	for _, cancel := range []bool{false, true} {
		for _, recErr := range []bool{false, true} {
			all = append(all, answer{err: errors.New("editor gone"), cancel: cancel, recErr: recErr},
				answer{cancel: cancel, recErr: recErr})
			for _, id := range answers {
				all = append(all, answer{selected: true, id: id, cancel: cancel, recErr: recErr})
			}
		}
	}
	run := func(mode, scope, rule string, ap approval, a answer) permitRun {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		asker := &scriptedAsker{err: a.err, selected: a.selected, id: a.id}
		if a.cancel {
			asker.cancel = cancel
		}
		rules := map[string]string{}
		if rule != "" {
			rules[scope] = rule
		}
		var logged strings.Builder
		log := zerolog.New(&logged)
		var r permitRun
		g := &permissionGate{asker: asker, sessionID: "sess_1", turn: 3, mode: func() string { return mode },
			rules: func() map[string]string { return rules }, log: &log,
			record: func(typ string, data any) error {
				if a.recErr {
					return errors.New("disk full")
				}
				r.recorded = append(r.recorded, typ, data)
				return nil
			}}
		ok, out, err := g.permit(ctx, session.MessageToolCall{ID: "call_1", Name: tools.RunCommand, Arguments: "{}"},
			tools.Info{Title: "Run make", Kind: "execute", Locations: []string{"/w"}}, ap)
		r.ok, r.out, r.rules, r.asked, r.logged = ok, out, rules, asker.asked, logged.String()
		if err != nil {
			r.err = err.Error()
			if errors.Is(err, errCancelledDuringTool) {
				r.err = "cancelled: " + r.err
			}
		}
		return r
	}
	n := 0
	for _, mode := range modes {
		for _, scope := range scopes {
			for _, rule := range standing {
				for _, protected := range []string{"", "it is a git hook"} {
					for _, title := range []string{"", "make in /w"} {
						ap := approval{scope: scope, title: title, protected: protected, input: json.RawMessage(`{"command":"make"}`),
							preview: []acp.ToolCallContent{acp.ContentText("the diff")}}
						for _, a := range all {
							n++
							checkPermit(t, mode, scope, rule, ap, a.err != nil, a.recErr, run(mode, scope, rule, ap, a))
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases", n)
}

func checkPermit(t *testing.T, mode, scope, rule string, ap approval, askFails, recordFails bool, r permitRun) {
	t.Helper()
	where := fmt.Sprintf("mode %q scope %q standing %q protected %q: %+v", mode, scope, rule, ap.protected, r)
	decidedByMode := mode == ModeReadOnly || rule == session.RejectAlways
	if decidedByMode && (r.ok || len(r.asked) > 0) {
		t.Fatalf("read_only or a standing rejection must refuse without asking; %s", where)
	}
	modeAllows := mode == ModeFullAccess || (mode == ModeAcceptEdits && scope == scopeEdits)
	allowedUnasked := (modeAllows || rule == session.AllowAlways) && (ap.protected == "" || mode == ModeFullAccess)
	if wantAsk := !decidedByMode && !allowedUnasked; (len(r.asked) > 0) != wantAsk || (allowedUnasked && !decidedByMode && !r.ok) {
		t.Fatalf("asked %d times, want a request: %v; %s", len(r.asked), wantAsk, where)
	}
	for _, req := range r.asked {
		if !bytes.Equal(req.ToolCall.RawInput, ap.input) || !reflect.DeepEqual(req.ToolCall.Content[:len(ap.preview)], ap.preview) {
			t.Fatalf("the request must show the preview first and what runs as rawInput; %s", where)
		}
		for _, o := range req.Options {
			if ap.protected != "" && (o.OptionID == session.AllowAlways || o.OptionID == session.RejectAlways) {
				t.Fatalf("a protected write is offered a standing answer; %s", where)
			}
		}
	}
	if ap.protected != "" && mode != ModeFullAccess && r.ok && len(r.asked) == 0 {
		t.Fatalf("a protected write ran unasked outside full_access; %s", where)
	}
	if len(r.asked) == 0 {
		return
	}
	var answered string
	if len(r.recorded) == 2 {
		answered = r.recorded[1].(session.Permission).Outcome
	}
	if r.ok != (answered == session.AllowOnce || answered == session.AllowAlways) {
		t.Fatalf("after asking, a call runs exactly when an allowing answer is on record; %s", where)
	}
	if askFails || recordFails {
		if r.ok {
			t.Fatalf("a call ran without an answer on record; %s", where)
		}
	}
	wantRule := rule
	if ap.protected == "" && (answered == session.AllowAlways || answered == session.RejectAlways) {
		wantRule = answered
	}
	if r.rules[scope] != wantRule {
		t.Fatalf("standing answer %q after the answer, want %q; %s", r.rules[scope], wantRule, where)
	}
}
