package inspect_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/inspect"
	"github.com/rebound-agent/rebound/internal/golden"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

var update = golden.Update

// fixtures are hand-written logs for what the golden scenarios do not (yet)
// produce: a fallback model, tool calls and a compaction; a turn whose
// process died, closed on reload, and a chain carried into the next turn;
// a log that ends in a wait with a torn last line; hostile text; waits on
// the shared rate limit (held).
var fixtures = []string{"fallback_compaction_tools", "interrupted_then_carried", "open_torn", "hostile", "plan", "usage", "usage_hostile", "held"}

func TestInspect_Fixtures(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			tl, err := inspect.Load(filepath.Join("testdata", name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var txt, js bytes.Buffer
			if err := tl.Text(&txt); err != nil {
				t.Fatal(err)
			}
			if err := tl.JSON(&js); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", name+".txt"), txt.Bytes())
			compareGolden(t, filepath.Join("testdata", name+".json"), js.Bytes())
			if name == "fallback_compaction_tools" || name == "usage" {
				var page bytes.Buffer
				if err := tl.HTML(&page); err != nil {
					t.Fatal(err)
				}
				compareGolden(t, filepath.Join("testdata", name+".html"), page.Bytes())
			}
		})
	}
}

// TestInspect_Model pins the facts a reader relies on, independent of how
// they are rendered.
func TestInspect_Model(t *testing.T) {
	t.Run("fallback, tools, compaction", func(t *testing.T) {
		tl := load(t, "fallback_compaction_tools")
		turn := tl.Turns[0]
		if got := len(turn.Steps); got != 5 {
			t.Fatalf("steps = %d, want 5", got)
		}
		for i, want := range []bool{false, false, true, true, true} {
			if turn.Steps[i].Fallback != want {
				t.Errorf("step %d fallback = %v, want %v", i+1, turn.Steps[i].Fallback, want)
			}
		}
		r := turn.Steps[0].Retry
		if r == nil || r.DelayMs != 480 || r.Wait != inspect.WaitDone || *r.WaitedMs != 481 {
			t.Errorf("step 1 retry = %+v, want 480 ms scheduled, 481 ms waited", r)
		}
		if tools := turn.Steps[2].Tools; len(tools) != 1 || tools[0].Name != "read_file" || tools[0].Status != "completed" {
			t.Errorf("step 3 tools = %+v", tools)
		}
		if c := turn.Compactions; len(c) != 1 || c[0].Replaced != 4 || c[0].AtMs != 6500 {
			t.Errorf("compactions = %+v", c)
		}
		want := inspect.Totals{Attempts: 5, Failed: 3, Retries: 2, WaitedMs: 481 + 1025, ElapsedMs: 8000}
		if diff := cmp.Diff(want, turn.Totals); diff != "" {
			t.Errorf("totals (-want +got):\n%s", diff)
		}
	})
	t.Run("interrupted turn, carried chain", func(t *testing.T) {
		tl := load(t, "interrupted_then_carried")
		t1, t2 := tl.Turns[0], tl.Turns[1]
		if t1.Outcome.Status != inspect.TurnInterrupted {
			t.Errorf("turn 1 status = %q", t1.Outcome.Status)
		}
		// The closing events were written an hour later, on reload: the
		// turn ran until its last live event.
		if t1.Totals.ElapsedMs != 31000 {
			t.Errorf("turn 1 elapsed = %d ms, want 31000 (up to its last live event)", t1.Totals.ElapsedMs)
		}
		if s := t1.Steps[1]; s.Outcome != inspect.StepInterrupted || s.DurationMs != 600 {
			t.Errorf("turn 1 step 2 = %s for %d ms, want interrupted for 600 ms", s.Outcome, s.DurationMs)
		}
		if r := t2.Steps[0].Retry; r == nil || r.RetryID != "retry_c" || r.Retry != 2 {
			t.Errorf("turn 2 retry = %+v, want retry 2 of the carried chain", r)
		}
		// llm/retry without failure facts: the step's own facts stand.
		if f := t2.Steps[0].Failure; f == nil || f.Code != "SERVER" {
			t.Errorf("turn 2 step 1 failure = %+v", f)
		}
	})
	t.Run("open turn, torn line", func(t *testing.T) {
		tl := load(t, "open_torn")
		turn := tl.Turns[0]
		if turn.Outcome.Status != inspect.TurnOpen || turn.Steps[0].Retry.Wait != inspect.WaitOpen || turn.Steps[0].Retry.WaitedMs != nil {
			t.Errorf("outcome %+v, retry %+v: want an open turn waiting for an unknown time", turn.Outcome, turn.Steps[0].Retry)
		}
		if len(tl.Warnings) != 2 || !strings.Contains(tl.Warnings[0], "torn last line") || !strings.Contains(tl.Warnings[1], "no turn/end") {
			t.Errorf("warnings = %q", tl.Warnings)
		}
	})
}

// TestInspect_Usage pins the usage a reader is shown: per turn the context
// at its end, the counts summed over its steps and its own cost (not the
// session's cumulative figure the log records), and nothing for a log or a
// turn that recorded no usage.
func TestInspect_Usage(t *testing.T) {
	cost := func(v float64) *float64 { return &v }
	t.Run("two costed turns, an estimate, a turn without usage", func(t *testing.T) {
		tl := load(t, "usage")
		want := []*inspect.Usage{
			{Used: 2600, Size: 128000, PromptTokens: 1200 + 2400, CompletionTokens: 300 + 200, CachedTokens: 1024,
				Cost: cost(0.0081), Currency: "USD"},
			// Its last step is estimated: the context is marked so, and
			// the step's counts are missing from the sums, said so.
			{Used: 3300, Size: 128000, Estimated: true, PromptTokens: 2700, CompletionTokens: 200, CachedTokens: 2560,
				Unreported: 1, Cost: cost(0.0031), Currency: "USD"}, // 0.0112 cumulative
			nil, // failed before any request finished
		}
		for i, w := range want {
			if diff := cmp.Diff(w, tl.Turns[i].Usage); diff != "" {
				t.Errorf("turn %d usage (-want +got):\n%s", i+1, diff)
			}
		}
		session := &inspect.Usage{Used: 3300, Size: 128000, Estimated: true, PromptTokens: 6300, CompletionTokens: 700,
			CachedTokens: 3584, Unreported: 1, Cost: cost(0.0112), Currency: "USD"}
		if diff := cmp.Diff(session, tl.Usage); diff != "" {
			t.Errorf("session usage (-want +got):\n%s", diff)
		}
		var txt bytes.Buffer
		if err := tl.Text(&txt); err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{
			"usage   context at end 3,300/128,000 tokens (2.6%, est.) · prompt 6,300 (3,584 cached) · completion 700 · tokens of 1 request estimated (the provider did not count them) · cost 0.0112 USD",
			"  context 3,300/128,000 tokens (2.6%, est.) · prompt 2,700 (2,560 cached) · completion 200 · tokens of 1 request estimated (the provider did not count them) · cost 0.0031 USD",
		} {
			if !strings.Contains(txt.String(), line+"\n") {
				t.Errorf("text lacks the line\n%s\nin\n%s", line, txt.String())
			}
		}
		// Turn 3 has no usage line: its summary is followed by its table.
		if !strings.Contains(txt.String(), "failed AUTH · 1 attempt, 1 failed · no retries · took 0.300s\n  step ") {
			t.Errorf("turn 3 shows usage it does not have:\n%s", txt.String())
		}
	})
	t.Run("a log written before usage", func(t *testing.T) {
		for _, name := range []string{"fallback_compaction_tools", "plan"} {
			tl := load(t, name)
			if tl.Usage != nil {
				t.Errorf("%s: session usage %+v, want none", name, tl.Usage)
			}
			for _, turn := range tl.Turns {
				if turn.Usage != nil {
					t.Errorf("%s: turn %d usage %+v, want none", name, turn.Turn, turn.Usage)
				}
			}
			var txt, page, js bytes.Buffer
			if err := tl.Text(&txt); err != nil {
				t.Fatal(err)
			}
			if err := tl.HTML(&page); err != nil {
				t.Fatal(err)
			}
			if err := tl.JSON(&js); err != nil {
				t.Fatal(err)
			}
			for what, out := range map[string]string{"text": txt.String(), "html": page.String(), "json": js.String()} {
				for _, bad := range []string{"usage", "completion", "cached", "cost "} {
					if strings.Contains(out, bad) {
						t.Errorf("%s %s mentions %q", name, what, bad)
					}
				}
			}
		}
	})
	t.Run("hostile figures", func(t *testing.T) {
		tl := load(t, "usage_hostile")
		t1 := tl.Turns[0].Usage
		if t1.PromptTokens != math.MaxInt64 || t1.CompletionTokens != math.MaxInt64 {
			t.Errorf("turn 1 sums %d, %d: want them saturated, not wrapped", t1.PromptTokens, t1.CompletionTokens)
		}
		// The cumulative cost went down (turn 2) or changed currency (turn
		// 3): no figure. Turn 4 is measured from turn 3's record.
		for i, want := range []*float64{cost(1.7976931348623157e308), nil, nil, cost(1.5)} {
			if diff := cmp.Diff(want, tl.Turns[i].Usage.Cost); diff != "" {
				t.Errorf("turn %d cost (-want +got):\n%s", i+1, diff)
			}
		}
		var txt, page, js bytes.Buffer
		if err := tl.Text(&txt); err != nil {
			t.Fatal(err)
		}
		if err := tl.HTML(&page); err != nil {
			t.Fatal(err)
		}
		if err := tl.JSON(&js); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(txt.String(), "\n") {
			if utf8.RuneCountInString(line) > 300 {
				t.Errorf("line of %d chars: %s", utf8.RuneCountInString(line), line)
			}
		}
		if !strings.Contains(txt.String(), "(over 999%)") || !strings.Contains(txt.String(), "cost 1.79769e+308 ") {
			t.Errorf("absurd fill or cost not bounded:\n%s", txt.String())
		}
		if strings.Contains(page.String(), "<b>") || !strings.Contains(page.String(), "&lt;b&gt;") {
			t.Errorf("the currency is not escaped in the page")
		}
	})
}

func TestInspect_Invalid(t *testing.T) {
	_, err := inspect.Load(filepath.Join("testdata", "invalid.jsonl"))
	var ie *session.InvariantError
	if !errors.As(err, &ie) || ie.Line != 4 || !strings.Contains(err.Error(), "invalid.jsonl:4: step/start for step 2 while step 1 is open") {
		t.Fatalf("err = %v, want the invariant error of line 4", err)
	}
	// Build checks events that did not come from Load too.
	_, err = inspect.Build([]session.Event{{Seq: 2, V: 1, Type: session.TypeSessionStart, Data: json.RawMessage(`{"sessionId":"s"}`)}})
	if !errors.As(err, &ie) || ie.Line != 1 {
		t.Fatalf("Build err = %v, want an invariant error at event 1", err)
	}
}

func TestInspect_HTMLEscapes(t *testing.T) {
	tl := load(t, "hostile")
	var page bytes.Buffer
	if err := tl.HTML(&page); err != nil {
		t.Fatal(err)
	}
	out := page.String()
	for _, bad := range []string{"<script", "<img", "<b>"} {
		if strings.Contains(out, bad) {
			t.Errorf("page contains %q unescaped", bad)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;alert(&#39;failure&#39;)&lt;/script&gt;") {
		t.Errorf("page does not show the failure message escaped")
	}
	if got := strings.Count(out, `<rect class="bar `); got != 2 {
		t.Errorf("%d bars, want 2", got)
	}
	// A code outside the taxonomy is drawn as "other", not as a class name
	// taken from the log.
	if !strings.Contains(out, `class="bar c-other"`) {
		t.Errorf("unknown code not drawn as c-other")
	}

	var txt bytes.Buffer
	if err := tl.Text(&txt); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(txt.String(), '\x1b') {
		t.Errorf("text output passes an escape character to the terminal:\n%s", txt.String())
	}
}

// TestInspect_Snapshots builds the timeline of every golden scenario's log
// (snapshots/*.jsonl, the "dir":"log" lines) and checks what must hold for
// any log: one attempt per step/start, one retry per llm/retry, one bar per
// attempt in the page, and a wait for every retry.
func TestInspect_Snapshots(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "snapshots", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no snapshots: %v", err)
	}
	for _, p := range paths {
		for i, events := range golden.SnapshotLogs(t, p) { // none: a scenario that never creates a session
			name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
			if i > 0 {
				name += fmt.Sprintf("/log%d", i+1)
			}
			t.Run(name, func(t *testing.T) {
				tl, err := inspect.Build(events)
				if err != nil {
					t.Fatal(err)
				}
				var steps, retries int
				for _, ev := range events {
					switch ev.Type {
					case session.TypeStepStart:
						steps++
					case session.TypeLLMRetry:
						var r session.LLMRetry
						if json.Unmarshal(ev.Data, &r) == nil && r.Policy != recovery.PolicyShared { // a hold is no retry
							retries++
						}
					}
				}
				if tl.Totals.Attempts != steps || tl.Totals.Retries != retries {
					t.Errorf("totals %+v, want %d attempts and %d retries", tl.Totals, steps, retries)
				}
				for _, turn := range tl.Turns {
					for _, s := range turn.Steps {
						if s.Retry != nil && s.Retry.Wait == "" {
							t.Errorf("turn %d step %d: retry without a wait outcome", turn.Turn, s.Step)
						}
						if s.Outcome == inspect.StepOpen {
							t.Errorf("turn %d step %d left open in a closed log", turn.Turn, s.Step)
						}
					}
				}
				var page bytes.Buffer
				if err := tl.HTML(&page); err != nil {
					t.Fatal(err)
				}
				if got := strings.Count(page.String(), `<rect class="bar `); got != steps {
					t.Errorf("%d bars in the page, want one per attempt (%d)", got, steps)
				}
			})
		}
	}
}

var tagRE = regexp.MustCompile(`(?s)<[^>]*>`)

func TestInspect_HTMLSelfContained(t *testing.T) {
	tl := load(t, "fallback_compaction_tools")
	var page bytes.Buffer
	if err := tl.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, tag := range tagRE.FindAllString(page.String(), -1) {
		// The only URL is the SVG namespace, which is an identifier, not a
		// fetch; everything else is inline.
		if strings.Contains(tag, "xmlns=") {
			continue
		}
		for _, ext := range []string{"src=", "href=", "<link", "<script", "http:", "https:"} {
			if strings.Contains(tag, ext) {
				t.Errorf("tag %s refers outside the page (%s)", tag, ext)
			}
		}
	}
}

func load(t *testing.T, name string) *inspect.Timeline {
	t.Helper()
	tl, err := inspect.Load(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// snapshotLog returns the session log events recorded in a golden
// transcript.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Compare(t, path, got, *update, "go test ./inspect -update")
}

// TestText_NoControlCharactersFromTheLog: a hostile log's stop reason, code
// or model cannot send escape sequences to the terminal.
func TestText_NoControlCharactersFromTheLog(t *testing.T) {
	log := strings.Join([]string{
		`{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"session/start","data":{"sessionId":"s","cwd":"/w","model":"m` + `\u001b[31m"}}`,
		`{"seq":2,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/start","data":{"turn":1,"prompt":[],"text":"hi"}}`,
		`{"seq":3,"v":1,"time":"2000-01-01T00:00:00Z","type":"step/start","data":{"turn":1,"step":1,"model":"m"}}`,
		`{"seq":4,"v":1,"time":"2000-01-01T00:00:00Z","type":"step/end","data":{"turn":1,"step":1,"outcome":"failed","failure":{"code":"X\u001b[2J","message":"bad\u0007","requestId":"r\u001b]0;x\u0007"}}}`,
		`{"seq":5,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/end","data":{"turn":1,"stopReason":"end\u001b[2J","error":{"code":"Y\u001b[0m"}}}`,
	}, "\n") + "\n"
	ld, err := session.Parse(strings.NewReader(log), "hostile.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := inspect.Build(ld.Events)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tl.Text(&out); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f)) {
			t.Fatalf("control character %U in the output:\n%q", r, out.String())
		}
	}
}

// events builds a log from (type, data) pairs, one second apart.
func events(t *testing.T, pairs ...any) []session.Event {
	t.Helper()
	start := time.Date(2024, 5, 6, 10, 0, 0, 0, time.UTC)
	var out []session.Event
	for i := 0; i < len(pairs); i += 2 {
		data, err := json.Marshal(pairs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, session.Event{Seq: int64(len(out) + 1), V: 1, Time: start.Add(time.Duration(i/2) * time.Second),
			Type: pairs[i].(string), Data: data})
	}
	return out
}

// A model the user chose in the picker (session/config) is not the
// overload fallback, though it differs from the session's first model;
// only the recorded fallback decision (an llm/retry of action fallback)
// makes a step's model the fallback, for the rest of that turn.
func TestInspect_FallbackIsTheRecordedDecision(t *testing.T) {
	overloaded := json.RawMessage(`{"code":"OVERLOADED","status":529}`)
	for _, sessionModel := range []string{"big", ""} { // old logs recorded no session model
		evs := events(t,
			session.TypeSessionStart, session.SessionStart{SessionID: "s", Cwd: "/", Model: sessionModel},
			session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: json.RawMessage(`[]`), Text: "a"},
			session.TypeStepStart, session.StepStart{Turn: 1, Step: 1, Model: "big"},
			session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, MessageID: "m1", Text: "x"},
			session.TypeStepEnd, session.StepEnd{Turn: 1, Step: 1, Outcome: session.OutcomeOK},
			session.TypeTurnEnd, session.TurnEnd{Turn: 1, StopReason: "end_turn"},
			session.TypeConfig, session.Config{ConfigID: "model", Value: "picked"},
			session.TypeTurnStart, session.TurnStart{Turn: 2, Prompt: json.RawMessage(`[]`), Text: "b"},
			session.TypeStepStart, session.StepStart{Turn: 2, Step: 1, Model: "picked"},
			session.TypeStepEnd, session.StepEnd{Turn: 2, Step: 1, Outcome: session.OutcomeFailed, Failure: overloaded},
			session.TypeLLMRetry, session.LLMRetry{Turn: 2, Step: 1, RetryID: "r", Retry: 1, MaxRetries: 1, Policy: "fallback", PolicyRetry: 1,
				Action: "fallback", Model: "small", Failure: overloaded},
			session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: 2, RetryID: "r", Retry: 1},
			session.TypeStepStart, session.StepStart{Turn: 2, Step: 2, Model: "small"},
			session.TypeAssistantMessage, session.AssistantMessage{Turn: 2, Step: 2, MessageID: "m2", Text: "y"},
			session.TypeStepEnd, session.StepEnd{Turn: 2, Step: 2, Outcome: session.OutcomeOK},
			session.TypeTurnEnd, session.TurnEnd{Turn: 2, StopReason: "end_turn"},
			session.TypeTurnStart, session.TurnStart{Turn: 3, Prompt: json.RawMessage(`[]`), Text: "c"},
			session.TypeStepStart, session.StepStart{Turn: 3, Step: 1, Model: "picked"},
			session.TypeAssistantMessage, session.AssistantMessage{Turn: 3, Step: 1, MessageID: "m3", Text: "z"},
			session.TypeStepEnd, session.StepEnd{Turn: 3, Step: 1, Outcome: session.OutcomeOK},
			session.TypeTurnEnd, session.TurnEnd{Turn: 3, StopReason: "end_turn"},
		)
		tl, err := inspect.Build(evs)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]bool
		for _, turn := range tl.Turns {
			var steps []bool
			for _, s := range turn.Steps {
				steps = append(steps, s.Fallback)
			}
			got = append(got, steps)
		}
		want := [][]bool{{false}, {false, true}, {false}} // the picked model, then the fallback; a new turn starts on the picked model
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("session model %q: fallback per step (-want +got):\n%s", sessionModel, diff)
		}
		var text bytes.Buffer
		if err := tl.Text(&text); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(text.String(), "fallback: model"); n != 1 {
			t.Errorf("session model %q: the text notes a fallback %d times, want once:\n%s", sessionModel, n, text.String())
		}
	}
}
