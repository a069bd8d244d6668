package agent

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// TestHistory_MatchesDerivation is the property that keeps the incremental
// history from drifting: whatever a session's log goes through (turns,
// steps, chunks, tool calls and results, retries, failures, cancellations,
// interruptions, compactions, tails another process appends, and the log
// read again whole), after every append and every acquire what the session
// keeps derived equals what the whole log derives: Conversation, toLLM of
// it, RetryChain, NextTurn, the permission rules, the tool call ids and the
// title; and the model history pairs each tool result with its call by the
// id the provider gave it, which both derivations could get wrong alike.
//
// Each op syncs the log, so the run is bound by fsync: more seeds with
//
//	go test ./agent -run TestHistory_MatchesDerivation -history.seeds 200
//
// Under -race it runs 12 shorter sessions (20 ops each), not 8 of 50: the
// whole-log derivation after every append makes a session's cost grow with
// the square of its length, so this is a third of the CPU, and it reaches
// every statement of agent and session that 8 of 50 reach (-coverpkg,
// block by block), and fails on each hand mutation of history.go that 8 of
// 50 fail on (BENCHMARKS.md, "Fourth pass"). Each seed's session is a
// single goroutine the detector has little to find in; the run without
// -race (.ci/run's -update run) keeps 8 of 50.
func TestHistory_MatchesDerivation(t *testing.T) {
	seeds, ops := *historySeeds, *historyOps
	if testkit.Race && !flagSet("history.seeds") && !flagSet("history.ops") {
		seeds, ops = 12, 20
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runHistoryProperty(t, seed, ops)
		})
	}
}

var (
	historySeeds = flag.Int("history.seeds", 8, "sessions TestHistory_MatchesDerivation runs (12 under -race unless given)")
	historyOps   = flag.Int("history.ops", 50, "ops of each session of TestHistory_MatchesDerivation (20 under -race unless given)")
)

// flagSet reports whether the flag name was given.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func runHistoryProperty(t *testing.T, seed uint64, ops int) {
	dir := t.TempDir()
	a := New(Config{StateDir: dir, Model: "m", Logger: zerolog.Nop(), LogIdleTimeout: -1})
	t.Cleanup(func() { a.Close() })
	resp, err := a.NewSession(context.Background(), acp.NewSessionRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.store.lookup(resp.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 21))
	g := &logGen{r: r}
	// The generator's picture of the log starts after session/start.
	accepted := 0
	read := false // the next acquire reads the log, a tail or whole
	for op := range ops {
		switch k := r.IntN(10); {
		case k < 6: // a use of the session in this process
			s.turnMu.Lock()
			if err := a.store.acquire(s, true); err != nil {
				s.unlockTurn()
				t.Fatalf("op %d: acquire: %v", op, err)
			}
			g.sync(s.events)
			checkHistory(t, s, fmt.Sprintf("op %d, after acquire", op))
			if read {
				// What was read made the title: the last recorded, else
				// the first prompt's.
				if sum, _ := session.Summarize(s.events); s.listing.title != sum.Title {
					t.Fatalf("op %d, after acquire: title %q, want %q", op, s.listing.title, sum.Title)
				}
				read = false
			}
			for range r.IntN(30) {
				typ, data := g.next(false)
				if typ == session.TypeTurnEnd && !s.listing.titled {
					d := data.(session.TurnEnd)
					d.Title = firstPromptTitle(s.events) // as settle does
					data = d
				}
				var ev session.Event
				var err error
				if r.IntN(8) == 0 {
					ev, err = s.appendSync(typ, data)
				} else {
					ev, err = s.append(typ, data)
				}
				if err != nil {
					continue // the log's rules refused it: nothing changed
				}
				accepted++
				g.accept(ev, data)
				s.mimic(ev, data)
				if r.IntN(8) == 0 {
					s.toolCallIDs() // made from the log, then kept up to date
				}
				checkHistory(t, s, fmt.Sprintf("op %d, after %s seq %d", op, typ, ev.Seq))
			}
			a.store.done(s)
		case k < 8: // another process appends, and may die mid-turn
			l, _, err := session.OpenShared(dir, s.id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Lock(); err != nil {
				t.Fatal(err)
			}
			g.reset()
			ld, err := session.Load(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			g.sync(ld.Events)
			for range r.IntN(30) {
				typ, data := g.next(true)
				ev, err := l.Append(typ, data)
				if err == nil {
					accepted++
					g.accept(ev, data)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			read = true
		case k < 9: // a panicked turn: the log is read again whole
			s.use.reload, read = true, true
		default: // closed while idle, opened again by the next use
			a.store.mu.Lock()
			a.store.closeLocked(s)
			a.store.mu.Unlock()
			read = true
		}
	}
	if accepted < ops {
		t.Errorf("only %d events were accepted in %d ops: the generator needs work", accepted, ops)
	}
}

// checkHistory compares what s keeps derived with what its events derive.
func checkHistory(t *testing.T, s *sessionState, where string) {
	t.Helper()
	want, err := session.Conversation(s.events)
	if err != nil {
		t.Fatalf("%s: Conversation: %v", where, err)
	}
	h, err := s.history()
	if err != nil {
		t.Fatalf("%s: history: %v", where, err)
	}
	// reflect first: cmp.Diff is slow on long slices, and says the same.
	if got := h.conv.Messages(); len(want)+len(got) > 0 && !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: conversation (-whole log +incremental):\n%s", where, cmp.Diff(want, got))
	}
	if want, got := toLLM(want), h.model(); len(want)+len(got) > 0 && !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: model history (-whole log +incremental):\n%s", where, cmp.Diff(want, got))
	}
	// Both derivations render results alike, so that they pair with their
	// calls is checked on its own.
	checkToolPairs(t, h.model(), where)
	if !openTurn(want) {
		next := turnMessages{history: h.withSystem(llm.Message{Role: llm.RoleSystem}), prompt: llm.Message{Role: llm.RoleUser, Content: "next"}}
		if sent, _ := sendable(next.build(nil, "", false)); toolPairProblem(sent, false) != "" {
			t.Fatalf("%s: the next turn's request: %s", where, toolPairProblem(sent, false))
		}
	}
	// Why a prompt needs no incomplete replies dropped: the last turn
	// closed them (closeTurn), and a local one makes none.
	if h.user < 0 && len(h.incomplete) > 0 {
		t.Fatalf("%s: no turn is open, yet %d incomplete replies wait for its end", where, len(h.incomplete))
	}
	id, retries, used := session.RetryChain(s.events)
	gid, gretries, gused := h.conv.RetryChain()
	if id != gid || retries != gretries || !cmp.Equal(used, gused, cmpopts.EquateEmpty()) {
		t.Fatalf("%s: retry chain %q %d %v, want %q %d %v", where, gid, gretries, gused, id, retries, used)
	}
	if got, want := h.conv.NextTurn(), session.NextTurn(s.events); got != want {
		t.Fatalf("%s: next turn %d, want %d", where, got, want)
	}
	if diff := cmp.Diff(session.PermissionRules(s.events), s.rules, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%s: permission rules (-whole log +kept):\n%s", where, diff)
	}
	if s.toolIDs != nil {
		all := map[string]bool{}
		for _, m := range want {
			for _, c := range m.ToolCalls {
				all[c.ID] = true
			}
		}
		if diff := cmp.Diff(all, s.toolIDs); diff != "" {
			t.Fatalf("%s: tool call ids (-whole log +kept):\n%s", where, diff)
		}
	}
	// An untitled session's title is made from its first prompt when the
	// log is read; a recorded one is the last recorded.
	sum, titled := session.Summarize(s.events)
	if s.listing.titled != titled || titled && s.listing.title != sum.Title {
		t.Fatalf("%s: title %q (recorded %v), want %q (recorded %v)", where, s.listing.title, s.listing.titled, sum.Title, titled)
	}
}

// checkToolPairs checks that each tool result of msgs, the session's
// history, answers a call of the assistant message its run of results
// follows, by the id the provider gave it, once, and that a call followed
// by anything but its run's end is answered: a strict provider refuses
// anything else. The only run without its call is one a compaction cut
// from it, right after its summary (a log written before e89f27c has
// them): checkHistory checks that the next turn's request never sends it.
func checkToolPairs(t *testing.T, msgs []llm.Message, where string) {
	t.Helper()
	if p := toolPairProblem(msgs, true); p != "" {
		t.Fatalf("%s: the history: %s", where, p)
	}
}

// openTurn reports whether the conversation's last turn has not ended.
func openTurn(conv []session.Message) bool {
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == session.RoleUser {
			return conv[i].TurnOutcome == ""
		}
	}
	return false
}

// mimic keeps what the agent's own code keeps beside an append (toolCalls,
// settle), for appends made here directly.
func (s *sessionState) mimic(ev session.Event, data any) {
	switch d := data.(type) {
	case session.AssistantMessage:
		if s.toolIDs != nil {
			for _, c := range d.ToolCalls {
				s.toolIDs[c.ID] = true
			}
		}
	case session.TurnEnd:
		if d.Title != "" {
			s.listing.title, s.listing.titled = d.Title, true
		}
	}
}

// logGen proposes plausible next events of a log from its picture of it;
// the log's checker refuses those that break a rule (which leaves the log
// as it was), and accept updates the picture with those it took.
type logGen struct {
	r           *rand.Rand
	n           int // for fresh ids
	turn        int
	open        bool
	step        int // last started step of the open turn
	attemptOpen bool
	msgStep     int               // step of the open turn's last message
	pending     map[string]string // id → name of calls awaiting a result
	calls       map[string]bool   // pending calls dispatched
	chain       string
	retry       int
	messages    int // in the log, for a compaction's Replaced
	// hist is the model history of the log (kept as a session keeps it),
	// for where a compaction's bounds fall among its messages: it only
	// steers what is proposed, checkHistory judges.
	hist *history
}

func (g *logGen) reset() { *g = logGen{r: g.r, n: g.n, hist: newHistory()} }

// sync rebuilds the picture from the events of the log.
func (g *logGen) sync(evs []session.Event) {
	g.reset()
	for _, ev := range evs {
		g.accept(ev, nil)
	}
}

func (g *logGen) accept(ev session.Event, _ any) {
	_ = g.hist.add(ev, nil) // the log took it
	dec := func(v any) {
		if err := json.Unmarshal(ev.Data, v); err != nil {
			panic(err)
		}
	}
	switch ev.Type {
	case session.TypeTurnStart:
		var d session.TurnStart
		dec(&d)
		g.turn, g.open, g.step, g.attemptOpen, g.msgStep = d.Turn, true, 0, false, 0
		g.pending, g.calls = map[string]string{}, map[string]bool{}
		g.messages++
	case session.TypeStepStart:
		var d session.StepStart
		dec(&d)
		g.step, g.attemptOpen = d.Step, true
	case session.TypeStepEnd:
		g.attemptOpen = false
	case session.TypeAssistantMessage:
		var d session.AssistantMessage
		dec(&d)
		g.msgStep = d.Step
		for _, c := range d.ToolCalls {
			g.pending[c.ID] = c.Name
		}
		g.messages++
	case session.TypeToolCall:
		var d session.ToolCall
		dec(&d)
		g.calls[d.ToolCallID] = true
	case session.TypeToolResult:
		var d session.ToolResult
		dec(&d)
		delete(g.pending, d.ToolCallID)
		delete(g.calls, d.ToolCallID)
		g.messages++
	case session.TypeLLMRetry:
		var d session.LLMRetry
		dec(&d)
		g.chain, g.retry = d.RetryID, d.Retry
	case session.TypeCompaction:
		var d session.Compaction
		dec(&d)
		if d.Failed == "" {
			g.messages++
		}
	case session.TypeTurnEnd:
		var d session.TurnEnd
		dec(&d)
		g.open = false
		if !d.Interrupted {
			g.chain, g.retry = "", 0
		}
	}
}

func (g *logGen) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

// text is short reply text, now and then with what encoding changes:
// invalid UTF-8, HTML characters, trailing spaces.
func (g *logGen) text() string {
	return []string{"Hello", "a <b> & c", "bad \xff byte ", "", "line\nline", "ünïcode  "}[g.r.IntN(6)]
}

func (g *logGen) pick(m map[string]string, dispatched bool) (id, name string, ok bool) {
	for id, name := range m {
		if g.calls[id] == dispatched {
			return id, name, true
		}
	}
	return "", "", false
}

// next proposes an event; ext says another process writes it (it records
// standing permission answers and titles, which this one keeps beside
// its own appends).
func (g *logGen) next(ext bool) (string, any) {
	r := g.r
	if !g.open {
		switch r.IntN(6) {
		case 0:
			return session.TypeMode, session.Mode{Mode: []string{"default", "read_only"}[r.IntN(2)]}
		case 1:
			return session.TypeConfig, session.Config{ConfigID: "model", Value: "m2"}
		}
		// Prompts that are commands by the rule of logs without local, or
		// render like one, with local recorded or not (a log written
		// before it was).
		prompts := []string{
			`[ {"type": "text", "text": "hi"} ]`, // compacted when encoded
			`[{"type":"text","text":"/status"}]`,
			`[{"type":"text","text":""},{"type":"text","text":"/status"}]`,
			`[{"type":"text","text":"hi"},{"type":"text","text":"/retry"}]`,
		}
		d := session.TurnStart{Turn: g.turn + 1, Prompt: json.RawMessage(prompts[r.IntN(len(prompts))]), Text: g.text()}
		if r.IntN(3) == 0 {
			d.Text = "/status"
		}
		if k := r.IntN(3); k > 0 {
			local := k == 1
			d.Local = &local
		}
		return session.TypeTurnStart, d
	}
	t := g.turn
	for {
		switch r.IntN(14) {
		case 0, 1:
			if !g.attemptOpen && len(g.pending) == 0 {
				return session.TypeStepStart, session.StepStart{Turn: t, Step: g.step + 1}
			}
		case 2:
			if g.attemptOpen && g.msgStep != g.step { // a step's chunks come before its message
				return session.TypeAssistantChunk, session.AssistantChunk{Turn: t, Step: g.step, Text: g.text(), Shown: r.IntN(2) == 0, MessageID: "msg"}
			}
		case 3:
			if g.attemptOpen && g.msgStep != g.step {
				m := session.AssistantMessage{Turn: t, Step: g.step, MessageID: g.id("msg_"), Text: g.text(), Reasoning: g.text(), FinishReason: "stop"}
				for range r.IntN(3) {
					c := session.MessageToolCall{ID: g.id("call_"), Name: "read_file", Arguments: `{"path": "a"}`}
					if r.IntN(2) == 0 { // one Rebound could not keep the provider's id for
						c.ProviderID = "fc_" + c.ID
					}
					m.ToolCalls = append(m.ToolCalls, c)
				}
				if len(m.ToolCalls) > 0 {
					m.FinishReason = "tool_calls"
				}
				return session.TypeAssistantMessage, m
			}
		case 4:
			if g.step > 0 && g.msgStep != g.step {
				return session.TypeAssistantMessage, session.AssistantMessage{Turn: t, Step: g.step, MessageID: g.id("msg_"), Text: g.text(), Incomplete: true}
			}
		case 5:
			if g.attemptOpen {
				return session.TypeStepEnd, session.StepEnd{Turn: t, Step: g.step, Outcome: []string{"ok", "failed", "cancelled", "truncated"}[r.IntN(4)]}
			}
		case 6:
			if id, name, ok := g.pick(g.pending, false); ok {
				return session.TypeToolCall, session.ToolCall{Turn: t, Step: g.step, ToolCallID: id, Name: name, Arguments: `{"path":"a"}`, Title: "Read a"}
			}
		case 7:
			if id, _, ok := g.pick(g.pending, true); ok {
				outcome := []string{session.AllowOnce, session.RejectOnce, session.PermissionCancelled}[r.IntN(3)]
				if ext {
					outcome = []string{session.AllowAlways, session.RejectAlways, session.AllowOnce}[r.IntN(3)]
				}
				return session.TypePermission, session.Permission{Turn: t, ToolCallID: id, Scope: []string{"edit_file", "run_command:make"}[r.IntN(2)], Outcome: outcome}
			}
		case 8, 9:
			for id := range g.pending {
				return session.TypeToolResult, session.ToolResult{Turn: t, ToolCallID: id, Status: []string{session.ToolCompleted, session.ToolFailed, session.ToolAborted}[r.IntN(3)],
					Output: g.text(), Content: json.RawMessage(`[ {"type":"content"} ]`)}
			}
		case 10:
			d := session.LLMRetry{Turn: t, Step: g.step, RetryID: g.id("retry_"), Retry: 1, Policy: []string{"", "transient", "overflow"}[r.IntN(3)]}
			if g.chain != "" && r.IntN(3) != 0 {
				d.RetryID, d.Retry = g.chain, g.retry+1
			}
			return session.TypeLLMRetry, d
		case 11:
			if g.chain != "" {
				return session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: t, RetryID: g.chain, Retry: g.retry}
			}
		case 12:
			if r.IntN(3) == 0 { // recorded failed: replaces nothing
				return session.TypeCompaction, session.Compaction{Turn: t, Step: g.step, CompactionID: g.id("cmp_"), Failed: "the summary did not finish"}
			}
			replaced := r.IntN(g.messages + 3)
			if inc := g.hist.incomplete; len(inc) > 0 && r.IntN(4) != 0 {
				// Next to an incomplete reply of the turn: mostly the first
				// message kept, else replaced or the second kept (in out,
				// after the system prompt's slot, the first kept is at
				// 1+Replaced).
				replaced = max(inc[r.IntN(len(inc))].at-1+[]int{0, 0, 1, -1}[r.IntN(4)], 0)
			}
			return session.TypeCompaction, session.Compaction{Turn: t, Step: g.step, CompactionID: g.id("cmp_"), Summary: g.text(), Replaced: replaced}
		case 13:
			d := session.TurnEnd{Turn: t}
			switch r.IntN(5) {
			case 0:
				d.Error = json.RawMessage(`{"code":"SERVER"}`)
			case 1:
				d.Error, d.Interrupted = json.RawMessage(`{"code":"ABORTED"}`), true
			default:
				d.StopReason = []string{"end_turn", "cancelled", "max_turn_requests", "max_tokens", ""}[r.IntN(5)]
			}
			if ext && r.IntN(2) == 0 {
				d.Title = "title " + g.id("")
			}
			return session.TypeTurnEnd, d
		}
	}
}
