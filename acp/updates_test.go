package acp_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
)

// TestUpdateConstructors pins each constructor's wire form: the JSON the
// literal it replaced produced (so golden transcripts keep their bytes),
// and a session/update the ACP schema accepts.
func TestUpdateConstructors(t *testing.T) {
	text := acp.TextBlock("hi")
	line := 3
	tests := []struct {
		name    string
		got     acp.SessionUpdate
		literal acp.SessionUpdate // as callers wrote it before the constructors
		want    string
	}{
		{"user message chunk", acp.UserMessageChunk("u1", text),
			acp.SessionUpdate{SessionUpdate: acp.UpdateUserMessageChunk, Content: &text, MessageID: "u1"},
			`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"},"messageId":"u1"}`},
		{"agent message chunk", acp.AgentMessageChunk("m1", text),
			acp.SessionUpdate{SessionUpdate: acp.UpdateAgentMessageChunk, Content: &text, MessageID: "m1"},
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m1"}`},
		{"agent thought chunk", acp.AgentThoughtChunk("m1", text),
			acp.SessionUpdate{SessionUpdate: acp.UpdateAgentThoughtChunk, Content: &text, MessageID: "m1"},
			`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hi"},"messageId":"m1"}`},
		{"chunk of a kind held as data", acp.Chunk(acp.UpdateAgentThoughtChunk, "", text),
			acp.SessionUpdate{SessionUpdate: acp.UpdateAgentThoughtChunk, Content: &text},
			`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hi"}}`},
		{"tool call", acp.ToolCallUpdate{ToolCallID: "t", Title: "Read a.go", Name: "read_file", Kind: acp.ToolKindRead,
			Status: acp.ToolStatusPending, Locations: []acp.ToolCallLocation{{Path: "/w/a.go", Line: &line}}, RawInput: json.RawMessage(`{"path":"a.go"}`)}.AsStart(),
			acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "t", Title: "Read a.go", Name: "read_file", Kind: acp.ToolKindRead,
				Status: acp.ToolStatusPending, Locations: []acp.ToolCallLocation{{Path: "/w/a.go", Line: &line}}, RawInput: json.RawMessage(`{"path":"a.go"}`)},
			`{"sessionUpdate":"tool_call","toolCallId":"t","title":"Read a.go","name":"read_file","kind":"read","status":"pending","locations":[{"path":"/w/a.go","line":3}],"rawInput":{"path":"a.go"}}`},
		{"tool call without a title", acp.ToolCallUpdate{ToolCallID: "t", Kind: acp.ToolKindOther, Status: acp.ToolStatusFailed,
			Content: []acp.ToolCallContent{acp.ContentText("x")}}.AsStart(),
			acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "t", Kind: acp.ToolKindOther, Status: acp.ToolStatusFailed,
				ToolContent: []acp.ToolCallContent{acp.ContentText("x")}},
			`{"sessionUpdate":"tool_call","toolCallId":"t","content":[{"type":"content","content":{"type":"text","text":"x"}}],"title":"","kind":"other","status":"failed"}`},
		{"tool call update", acp.ToolCallUpdate{ToolCallID: "t", Status: acp.ToolStatusCompleted, Content: []acp.ToolCallContent{acp.ContentText("x")}}.AsUpdate(),
			acp.SessionUpdate{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: "t", Status: acp.ToolStatusCompleted, ToolContent: []acp.ToolCallContent{acp.ContentText("x")}},
			`{"sessionUpdate":"tool_call_update","toolCallId":"t","content":[{"type":"content","content":{"type":"text","text":"x"}}],"status":"completed"}`},
		{"tool call update leaving content", acp.ToolCallUpdate{ToolCallID: "t", Status: acp.ToolStatusInProgress}.AsUpdate(),
			acp.SessionUpdate{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: "t", Status: acp.ToolStatusInProgress},
			`{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"in_progress"}`},
		{"tool call update clearing content", acp.ToolCallUpdate{ToolCallID: "t", Content: []acp.ToolCallContent{}}.AsUpdate(),
			acp.SessionUpdate{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: "t", ToolContent: []acp.ToolCallContent{}},
			`{"sessionUpdate":"tool_call_update","toolCallId":"t","content":[]}`},
		{"notice", acp.Notice("warning", "Retrying", "the provider timed out").WithMeta(acp.Meta{"k": "v"}),
			acp.SessionUpdate{SessionUpdate: acp.UpdateNotice, Severity: "warning", Title: "Retrying", Description: "the provider timed out", Meta: acp.Meta{"k": "v"}},
			`{"sessionUpdate":"notice","severity":"warning","title":"Retrying","description":"the provider timed out","_meta":{"k":"v"}}`},
		{"compaction started", acp.CompactionStarted("c"),
			acp.SessionUpdate{SessionUpdate: acp.UpdateCompaction, CompactionID: "c", Status: "in_progress"},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"in_progress"}`},
		{"compaction completed", acp.CompactionCompleted("c", []acp.ContentBlock{text}),
			acp.SessionUpdate{SessionUpdate: acp.UpdateCompaction, CompactionID: "c", Status: "completed", Summary: []acp.ContentBlock{text}},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"completed","summary":[{"type":"text","text":"hi"}]}`},
		{"compaction failed", acp.CompactionFailed("c", "no room"),
			acp.SessionUpdate{SessionUpdate: acp.UpdateCompaction, CompactionID: "c", Status: "failed", Error: "no room"},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"failed","error":"no room"}`},
		{"session info", acp.SessionInfoUpdate("Fix the build", "2026-01-02T03:04:05Z"),
			acp.SessionUpdate{SessionUpdate: acp.UpdateSessionInfo, Title: "Fix the build", UpdatedAt: "2026-01-02T03:04:05Z"},
			`{"sessionUpdate":"session_info_update","title":"Fix the build","updatedAt":"2026-01-02T03:04:05Z"}`},
		{"session info, only meta", acp.SessionInfoUpdate("", "").WithMeta(acp.Meta{"k": "v"}),
			acp.SessionUpdate{SessionUpdate: acp.UpdateSessionInfo, Meta: acp.Meta{"k": "v"}},
			`{"sessionUpdate":"session_info_update","_meta":{"k":"v"}}`},
		{"current mode", acp.CurrentModeUpdate("ask"),
			acp.SessionUpdate{SessionUpdate: acp.UpdateCurrentMode, CurrentModeID: "ask"},
			`{"sessionUpdate":"current_mode_update","currentModeId":"ask"}`},
		{"config options", acp.ConfigOptionUpdate([]acp.ConfigOption{{ID: "model", Name: "Model", Type: acp.ConfigOptionSelect, CurrentValue: "a",
			Options: []acp.ConfigOptionChoice{{Value: "a", Name: "A"}}}}),
			acp.SessionUpdate{SessionUpdate: acp.UpdateConfigOption, ConfigOptions: []acp.ConfigOption{{ID: "model", Name: "Model", Type: acp.ConfigOptionSelect, CurrentValue: "a",
				Options: []acp.ConfigOptionChoice{{Value: "a", Name: "A"}}}}},
			`{"sessionUpdate":"config_option_update","configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"a","options":[{"value":"a","name":"A"}]}]}`},
		{"available commands", acp.AvailableCommandsUpdate([]acp.AvailableCommand{{Name: "retry", Description: "Retry", Input: &acp.AvailableCommandInput{Hint: "wait"}}}),
			acp.SessionUpdate{SessionUpdate: acp.UpdateAvailableCommands, AvailableCommands: []acp.AvailableCommand{{Name: "retry", Description: "Retry", Input: &acp.AvailableCommandInput{Hint: "wait"}}}},
			`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"retry","description":"Retry","input":{"hint":"wait"}}]}`},
		{"plan", acp.PlanUpdate([]acp.PlanEntry{{Content: "a", Priority: acp.PlanPriorityHigh, Status: acp.PlanStatusPending}}),
			acp.SessionUpdate{SessionUpdate: acp.UpdatePlan, Entries: []acp.PlanEntry{{Content: "a", Priority: acp.PlanPriorityHigh, Status: acp.PlanStatusPending}}},
			`{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}`},
		{"empty plan", acp.PlanUpdate(nil),
			acp.SessionUpdate{SessionUpdate: acp.UpdatePlan, Entries: []acp.PlanEntry{}},
			`{"sessionUpdate":"plan","entries":[]}`},
		{"usage", acp.UsageUpdate(1230, 128000, &acp.Cost{Amount: 0.0125, Currency: "USD"}),
			acp.SessionUpdate{SessionUpdate: acp.UpdateUsage, Used: 1230, Size: 128000, Cost: &acp.Cost{Amount: 0.0125, Currency: "USD"}},
			`{"sessionUpdate":"usage_update","used":1230,"size":128000,"cost":{"amount":0.0125,"currency":"USD"}}`},
		{"usage, nothing used yet", acp.UsageUpdate(0, 0, nil),
			acp.SessionUpdate{SessionUpdate: acp.UpdateUsage},
			`{"sessionUpdate":"usage_update","used":0,"size":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.literal, tt.got); diff != "" {
				t.Errorf("constructor and literal differ (-literal +constructor):\n%s", diff)
			}
			for _, u := range []acp.SessionUpdate{tt.got, tt.literal} {
				b, err := json.Marshal(u)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != tt.want {
					t.Errorf("Marshal:\n got %s\nwant %s", b, tt.want)
				}
			}
			validate(t, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":`+tt.want+`}}`)
		})
	}
}

// TestNoSessionUpdateLiteralsOutsideACP keeps what the editor is shown in
// one vocabulary: outside this package an update is made by its kind's
// constructor, never as a SessionUpdate literal (tests building hostile
// input may).
func TestNoSessionUpdateLiteralsOutsideACP(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "vendor", "acp":
				if path != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "SessionUpdate" {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "acp" {
					t.Errorf("%s: an acp.SessionUpdate literal; use the constructor of its kind (acp/updates.go)", fset.Position(lit.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
