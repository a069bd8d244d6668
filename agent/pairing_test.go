package agent

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// toolPairProblem says why a strict provider would refuse msgs for how
// their tool calls and results pair, "" when none would: each tool result
// answers a call of the nearest assistant message before it, each call
// once, and every call is answered before the next message that is not a
// result, or the end. history relaxes two rules for the session's history
// (toLLM), which no request sends as it is: a run of results may follow a
// compaction's summary, its call replaced (the history keeps it as the log
// has it), and calls at the end may await their results (a turn runs them).
func toolPairProblem(msgs []llm.Message, history bool) string {
	summary := summaryMessage("").Content
	for i := 0; i < len(msgs); {
		m, at := msgs[i], i
		var calls []llm.ToolCall
		switch {
		case m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0:
			calls = m.ToolCalls
			i++
		case m.Role == llm.RoleTool:
			if !history || i == 0 || msgs[i-1].Role != llm.RoleUser || !strings.HasPrefix(msgs[i-1].Content, summary) {
				return fmt.Sprintf("tool result %q at %d follows no call", m.ToolCallID, i)
			}
			for ; i < len(msgs) && msgs[i].Role == llm.RoleTool; i++ {
			}
			continue // cut from its call
		default:
			i++
			continue
		}
		answered := make([]bool, len(calls))
		for ; i < len(msgs) && msgs[i].Role == llm.RoleTool; i++ {
			k := -1 // the first of its calls not answered yet
			for j, c := range calls {
				if c.ID == msgs[i].ToolCallID && !answered[j] {
					k = j
					break
				}
			}
			if k < 0 {
				return fmt.Sprintf("tool result %q at %d answers none of the calls %v at %d once", msgs[i].ToolCallID, i, calls, at)
			}
			answered[k] = true
		}
		for k, c := range calls {
			if !answered[k] && !(history && i == len(msgs)) {
				return fmt.Sprintf("call %q at %d is not answered before message %d", c.ID, at, i)
			}
		}
	}
	return ""
}

func TestPairToolCalls(t *testing.T) {
	call := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "read_file", Arguments: "{}"})
		}
		return m
	}
	result := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: "out " + id}
	}
	none := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: noResultOutput}
	}
	sys := llm.Message{Role: llm.RoleSystem, Content: "s"}
	user := llm.Message{Role: llm.RoleUser, Content: "u"}
	summary := summaryMessage("S.")
	reply := llm.Message{Role: llm.RoleAssistant, Content: "r"}
	tests := []struct {
		name     string
		in, want []llm.Message
		fixed    pairRepairs
	}{
		{"well formed", []llm.Message{sys, user, call("a", "b"), result("b"), result("a"), reply, user},
			nil, pairRepairs{}},
		{"a result a compaction cut from its call", []llm.Message{sys, summary, result("a"), reply, user},
			[]llm.Message{sys, summary, reply, user}, pairRepairs{dropped: 1}},
		{"the second of two results cut from their call", []llm.Message{sys, summary, result("b"), call("c"), result("c"), user},
			[]llm.Message{sys, summary, call("c"), result("c"), user}, pairRepairs{dropped: 1}},
		{"a result of another call", []llm.Message{user, call("a"), result("x"), result("a"), reply},
			[]llm.Message{user, call("a"), result("a"), reply}, pairRepairs{dropped: 1}},
		{"a call answered twice", []llm.Message{user, call("a"), result("a"), result("a"), reply},
			[]llm.Message{user, call("a"), result("a"), reply}, pairRepairs{dropped: 1}},
		{"a result after a reply", []llm.Message{user, call("a"), result("a"), reply, result("a"), user},
			[]llm.Message{user, call("a"), result("a"), reply, user}, pairRepairs{dropped: 1}},
		{"a call left without a result before the next prompt", []llm.Message{user, call("a", "b"), result("a"), user},
			[]llm.Message{user, call("a", "b"), result("a"), none("b"), user}, pairRepairs{answered: 1}},
		{"calls at the end", []llm.Message{user, call("a", "b")},
			[]llm.Message{user, call("a", "b"), none("a"), none("b")}, pairRepairs{answered: 2}},
		{"two calls with one id, a provider's reuse", []llm.Message{user, call("a", "a"), result("a"), result("a"), result("a"), reply},
			[]llm.Message{user, call("a", "a"), result("a"), result("a"), reply}, pairRepairs{dropped: 1}},
		{"the same id in two replies", []llm.Message{user, call("a"), result("a"), call("a"), result("a"), reply},
			nil, pairRepairs{}},
		{"both at once", []llm.Message{result("z"), user, call("a"), result("z"), call("b"), result("b"), result("b")},
			[]llm.Message{user, call("a"), none("a"), call("b"), result("b")}, pairRepairs{dropped: 3, answered: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got, fixed := pairToolCalls(in)
			want := tt.want
			if want == nil {
				want = tt.in
				if len(got) > 0 && &got[0] != &in[0] {
					t.Errorf("a well formed request was copied")
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pairToolCalls (-want +got):\n%s", diff)
			}
			if fixed != tt.fixed {
				t.Errorf("repairs %+v, want %+v", fixed, tt.fixed)
			}
			if diff := cmp.Diff(tt.in, in); diff != "" {
				t.Errorf("the input changed (-was +now):\n%s", diff)
			}
			if p := toolPairProblem(got, false); p != "" {
				t.Errorf("still refused: %s", p)
			}
		})
	}
}

// TestRequests_PairEveryToolCall is the property behind pairToolCalls:
// whatever a session's log holds (turns, steps, tool calls and their
// results, cancelled, failed and interrupted turns, compactions that cut
// anywhere, as versions before e89f27c did, or a compaction made now with
// any keep_recent_messages, a fork of the session), every request built
// from it, at any point, for the next turn or within the open one,
// continuing a cut reply or not, pairs each tool call with one result. A
// request already well formed is sent as built, and a repair only drops
// tool results or adds them: every other message is the one built.
func TestRequests_PairEveryToolCall(t *testing.T) {
	var stats pairStats
	for seed := range uint64(60) {
		runPairProperty(t, seed, 150, &stats)
	}
	// The generator still makes what the property is about.
	if stats.repaired < 100 || stats.cut < 50 || stats.compacted < 50 || stats.forks < 50 {
		t.Errorf("generated too little to test: %+v", stats)
	}
	t.Logf("%+v", stats)
}

type pairStats struct{ requests, repaired, cut, compacted, forks int }

func runPairProperty(t *testing.T, seed uint64, ops int, stats *pairStats) {
	r := rand.New(rand.NewPCG(seed, 44))
	g := &logGen{r: r}
	g.reset()
	h := newHistory()
	var events []session.Event
	add := func(h *history, events *[]session.Event, typ string, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		ev := session.Event{Seq: int64(len(*events) + 1), V: session.SchemaVersion, Time: time.Unix(int64(len(*events)), 0).UTC(), Type: typ, Data: b}
		if h.add(ev, nil) != nil {
			return false // the log's rules refused it
		}
		*events = append(*events, ev)
		return true
	}
	if !add(h, &events, session.TypeSessionStart, session.SessionStart{SessionID: "sess_1", Cwd: "/p"}) {
		t.Fatal("session/start refused")
	}
	for op := range ops {
		typ, data := g.next(false)
		if d, ok := data.(session.Compaction); ok && d.Failed == "" && r.IntN(2) == 0 {
			// As often as not, the cut falls right before a tool result, as
			// keep_recent_messages 2 made it after call, result, reply.
			var at []int
			for i, m := range h.model() {
				if m.Role == llm.RoleTool {
					at = append(at, i)
				}
			}
			if len(at) > 0 {
				d.Replaced = at[r.IntN(len(at))]
				data = d
				stats.cut++
			}
		}
		if !add(h, &events, typ, data) {
			continue
		}
		g.accept(events[len(events)-1], data)
		where := fmt.Sprintf("seed %d op %d (%s)", seed, op, typ)
		if len(g.pending) == 0 { // a turn asks again only once its calls are answered
			checkRequestsOf(t, h, g.open, r, where, stats)
		}
		if r.IntN(4) == 0 && !g.open { // a turn starts with a compaction (compact_at, /compact)
			checkCompacted(t, h, r, where, stats)
		}
		if typ == session.TypeTurnEnd && r.IntN(4) == 0 || r.IntN(40) == 0 {
			// The fork: the log up to its last finished turn, read again.
			copied, _ := forkedEvents(events)
			fh, fevents := newHistory(), []session.Event(nil)
			if !add(fh, &fevents, session.TypeSessionStart, session.SessionStart{SessionID: "sess_2", Cwd: "/q"}) {
				t.Fatal("session/start refused")
			}
			for _, ev := range copied {
				if !add(fh, &fevents, ev.Type, ev.Data) {
					t.Fatalf("%s: the fork refused its parent's %s", where, ev.Type)
				}
			}
			checkRequestsOf(t, fh, false, r, where+", forked", stats)
			stats.forks++
		}
	}
}

// checkRequestsOf builds the request of the session h derives as a turn
// builds it (turnMessages.build, then sendable): the next turn's, or the
// open turn's next attempt (open), maybe continuing a reply cut short.
func checkRequestsOf(t *testing.T, h *history, open bool, r *rand.Rand, where string, stats *pairStats) {
	t.Helper()
	all := h.withSystem(llm.Message{Role: llm.RoleSystem, Content: "system"})
	m := turnMessages{history: all, prompt: llm.Message{Role: llm.RoleUser, Content: "next"}}
	if open {
		if h.local {
			return // a command Rebound answers: no request
		}
		u := len(all) - 1
		for u >= 0 && all[u].Role != llm.RoleUser {
			u--
		}
		if u < 0 {
			return
		}
		m = turnMessages{history: all[:u], prompt: all[u], exchange: all[u+1:]}
	}
	prefix := []string{"", "", "partial"}[r.IntN(3)]
	checkRequest(t, m.build(nil, prefix, r.IntN(2) == 0), where, stats)
}

// checkCompacted compacts h's history as a turn about to start would,
// keeping any number of the newest messages, and checks the request
// built with the result.
func checkCompacted(t *testing.T, h *history, r *rand.Rand, where string, stats *pairStats) {
	t.Helper()
	rig := newCompactRig(text("S."))
	rig.c.overflow.KeepRecentMessages = r.IntN(7)
	all := slices.Clone(h.withSystem(llm.Message{Role: llm.RoleSystem, Content: "system"}))
	compacted, err := rig.c.compact(t.Context(), compactionOf(all))
	if err != nil {
		return // nothing to replace, or not smaller
	}
	stats.compacted++
	m := turnMessages{history: compacted, prompt: llm.Message{Role: llm.RoleUser, Content: "next"}}
	checkRequest(t, m.build(nil, "", false), fmt.Sprintf("%s, compacted keeping %d", where, rig.c.overflow.KeepRecentMessages), stats)
}

func checkRequest(t *testing.T, built []llm.Message, where string, stats *pairStats) {
	t.Helper()
	stats.requests++
	paired, fixed := pairToolCalls(built)
	if p := toolPairProblem(paired, false); p != "" {
		t.Fatalf("%s: %s:\n%s", where, p, pairsOf(paired))
	}
	if sent, _ := sendable(built); toolPairProblem(sent, false) != "" {
		t.Fatalf("%s: the request sendable makes is refused:\n%s", where, pairsOf(sent))
	}
	if toolPairProblem(built, false) == "" {
		if fixed != (pairRepairs{}) || len(built) > 0 && &paired[0] != &built[0] {
			t.Fatalf("%s: a well formed request was changed (%+v)", where, fixed)
		}
		return
	}
	stats.repaired++
	notTool := func(m llm.Message) bool { return m.Role != llm.RoleTool }
	if !slices.EqualFunc(filter(built, notTool), filter(paired, notTool), func(a, b llm.Message) bool { return cmp.Equal(a, b) }) {
		t.Fatalf("%s: the repair changed more than tool results:\n%s\nbecame\n%s", where, pairsOf(built), pairsOf(paired))
	}
	for _, m := range paired {
		if m.Role == llm.RoleTool && m.Content != noResultOutput && !slices.ContainsFunc(built, func(b llm.Message) bool { return cmp.Equal(b, m) }) {
			t.Fatalf("%s: the repair made up result %+v", where, m)
		}
	}
}

func filter(msgs []llm.Message, keep func(llm.Message) bool) []llm.Message {
	var out []llm.Message
	for _, m := range msgs {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// pairsOf is msgs one a line: role, call ids or answered id.
func pairsOf(msgs []llm.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		fmt.Fprintf(&b, "%d %s", i, m.Role)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " call:%s", c.ID)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " answers:%s", m.ToolCallID)
		}
		b.WriteString("\n")
	}
	return b.String()
}
