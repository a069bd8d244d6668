package tools_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/tools"
)

func TestParse_UpdatePlan(t *testing.T) {
	got, err := tools.Parse(tools.UpdatePlan, `{"entries":[{"content":"Read the code","status":"completed","priority":"high"},{"content":"Fix it","status":"in_progress","priority":"low"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := &tools.UpdatePlanArgs{Entries: []tools.PlanEntryArgs{
		{Content: "Read the code", Status: "completed", Priority: "high"},
		{Content: "Fix it", Status: "in_progress", Priority: "low"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	empty, err := tools.Parse(tools.UpdatePlan, `{"entries":[]}`)
	if err != nil || empty.(*tools.UpdatePlanArgs).Entries == nil {
		t.Errorf("empty plan: %#v, %v; want an empty, non-nil list", empty, err)
	}
	if info := tools.Describe(nil, got); info.Mutates || info.Title != "Update plan" {
		t.Errorf("Describe = %+v; want a non-mutating \"Update plan\"", info)
	}
}

func TestParse_UpdatePlanErrors(t *testing.T) {
	entry := func(content, status, priority string) string {
		return `{"content":"` + content + `","status":"` + status + `","priority":"` + priority + `"}`
	}
	many := strings.Repeat(entry("x", "pending", "low")+",", tools.MaxPlanEntries) + entry("x", "pending", "low")
	tests := []struct{ name, args, want string }{
		{"missing entries", `{}`, `update_plan: "entries" is required (an empty list clears the plan)`},
		{"null entries", `{"entries":null}`, `update_plan: "entries" is required (an empty list clears the plan)`},
		{"unknown top key", `{"entries":[],"todos":[]}`, `update_plan: "todos" is not an argument of this tool; the arguments are entries`},
		{"unknown entry key", `{"entries":[{"content":"a","status":"pending","priority":"low","id":"1"}]}`,
			`update_plan: entry 1: "id" is not an argument of this tool; the arguments are content, status, priority`},
		{"entry key case", `{"entries":[{"Content":"a","status":"pending","priority":"low"}]}`,
			`update_plan: entry 1: "Content" is not an argument name; names are case-sensitive, so write "content"; the arguments are content, status, priority`},
		{"bad enums", `{"entries":[` + entry("a", "done", "urgent") + `]}`,
			`update_plan: entry 1: "status" is "done"; it must be one of pending, in_progress, completed; entry 1: "priority" is "urgent"; it must be one of high, medium, low`},
		{"empty content", `{"entries":[` + entry("a", "pending", "low") + `,` + entry(" ", "pending", "low") + `]}`, `update_plan: entry 2: "content" is required`},
		{"long content", `{"entries":[` + entry(strings.Repeat("é", tools.MaxPlanEntryRunes+1), "pending", "low") + `]}`,
			`update_plan: entry 1: "content" is 201 characters long; the limit is 200`},
		{"multi-line content", `{"entries":[` + entry(`a\nb`, "pending", "low") + `]}`, `update_plan: entry 1: "content" must be one line`},
		{"too many", `{"entries":[` + many + `]}`, `update_plan: "entries" has 21 entries; the limit is 20, so merge or drop some`},
		{"entry not an object", `{"entries":["a"]}`, `update_plan: "entries" must be an object, not string`},
		{"entries not a list", `{"entries":{}}`, `update_plan: "entries" must be a list, not object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tools.Parse(tools.UpdatePlan, tt.args)
			if err == nil {
				t.Fatalf("Parse = %#v, want error %q", got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}
