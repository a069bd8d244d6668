package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// TestMain removes the rebound binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBinary()
	os.Exit(code)
}

// env is the demo's environment in a test.
type env struct {
	getenv func(string) string
	home   string
}

// demoEnv points the demo's agent at the built binary.
func demoEnv(t *testing.T, vars map[string]string) env {
	t.Helper()
	return env{getenv: testkit.DemoGetenv(t, vars), home: t.TempDir()}
}

// runDemo plays the demo with o in e, as `rebound demo` does.
func runDemo(t *testing.T, e env, o Options) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a guard, not a wait
	defer cancel()
	o.Getenv, o.Home, o.InspectHint = e.getenv, e.home, true
	var out, errb bytes.Buffer
	code = Run(ctx, o, &out, &errb)
	return code, out.String(), errb.String()
}

// summaryInt reads a number from the summary row named key.
func summaryInt(t *testing.T, out, key string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(key) + `\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("summary has no %q row:\n%s", key, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func summaryLogPath(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  session log\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("summary has no session log row:\n%s", out)
	}
	return m[1]
}

func skipShortDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
}

// The built-in demo, scaled for CI, in both streaming modes: every scene
// ends as expected, each reply reads once and whole (live, the dropped
// scene's reply goes on after the retry where it stopped), the summary
// counts one request per script step and nothing the editor was shown is
// discarded.
func TestRun_Fast(t *testing.T) {
	skipShortDemo(t)
	t.Parallel() // a child process each, paced in real time; no globals
	def, err := parseDefinition(defaultJSON)
	if err != nil {
		t.Fatal(err)
	}
	steps := len(def.script().Steps)
	dropped := demoSceneNamed(t, def, demoDroppedTitle)
	truncated := demoSceneNamed(t, def, demoTruncatedTitle)

	for _, mode := range []string{"live", "held"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			live := mode == "live"
			state := t.TempDir()
			e := demoEnv(t, nil) // builds the binary
			start := time.Now()
			code, out, stderr := runDemo(t, e, Options{Fast: true, Streaming: mode, StateDir: state})
			took := time.Since(start)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
			t.Logf("demo --fast --streaming %s took %s\n%s", mode, took, out)

			if strings.ContainsAny(out, "\r\x1b") {
				t.Errorf("output to a non-terminal has carriage returns or escape codes:\n%q", out)
			}
			if !strings.Contains(out, "\n  streaming "+mode+": ") {
				t.Errorf("the header does not say the agent streams %s", mode)
			}
			replies := demoReplies(out)
			for _, sc := range def.Scenes {
				if !strings.Contains(out, "› you: "+sc.Prompt+"\n") {
					t.Errorf("output lacks the prompt %q", sc.Prompt)
				}
				if !strings.Contains(out, sc.Title) {
					t.Errorf("output lacks the scene title %q", sc.Title)
				}
				if sc.Expect != "end_turn" {
					continue
				}
				// The reply reads once, whole: the last step's text (the
				// truncated scene's parts joined); live, where an attempt
				// failed after showing text, the reply it began, which
				// the retry went on with.
				want := sc.Steps[len(sc.Steps)-1].Text
				if sc.Title == demoTruncatedTitle {
					want = sc.Steps[1].Text + sc.Steps[2].Text
				}
				if live {
					for _, st := range sc.Steps {
						if st.DropAfter != nil || st.StallAfter != nil {
							want = st.Text
						}
					}
				}
				if n := demoCountEqual(replies, want); n != 1 {
					t.Errorf("the reply %q reads %d times, want once; replies:\n%s", want, n, strings.Join(replies, "\n"))
				}
			}

			// The dropped scene: live, the first words show, the retry's
			// lines follow, and the reply goes on from where it stopped on
			// a continuation line, nothing shown twice; held, the reply
			// shows once, after the retry.
			scene := demoSceneOutput(t, out, dropped)
			first := dropped.Steps[0]
			shown := demoShownPrefix(first)
			rest := strings.TrimPrefix(first.Text, shown)
			if live {
				order := regexp.MustCompile(`(?m)^rebound: ` + regexp.QuoteMeta(shown) + `…\n` +
					`  ↻ connection dropped · retrying in 0\.1s · retry 1 of 2\n` +
					`  ↻ waited 0\.\ds, retrying from where the reply stopped\n` +
					`        …` + regexp.QuoteMeta(rest) + `\n` +
					`  ✓ end_turn · 2 provider requests · `)
				if !order.MatchString(scene) {
					t.Errorf("live, the dropped scene does not read first words, retry, the rest of the same reply:\n%s", scene)
				}
			} else {
				order := regexp.MustCompile(`(?m)^› you: [^\n]*\n` +
					`  ↻ connection dropped · retrying in 0\.1s · retry 1 of 2\n` +
					`  ↻ waited 0\.\ds, retrying\n` +
					`rebound: ` + regexp.QuoteMeta(dropped.Steps[1].Text) + `\n` +
					`  ✓ end_turn · 2 provider requests · `)
				if !order.MatchString(scene) {
					t.Errorf("held, the dropped scene does not read retry, then the whole reply:\n%s", scene)
				}
				if strings.Contains(scene, shown) {
					t.Errorf("held, the dropped attempt's text %q was shown:\n%s", shown, scene)
				}
			}
			// The model repeated the words the user had seen; they show once.
			if n := strings.Count(scene, "Run go test"); n != 1 {
				t.Errorf("\"Run go test\" shows %d times in the dropped scene, want once:\n%s", n, scene)
			}

			retries := []string{
				"↻ rate limited (429) · retrying in 0.1s · retry 1 of 2\n",
				"↻ connection dropped · retrying in 0.1s · retry 1 of 2\n",
				"↻ stream stalled (idle timeout) · retrying in 0.1s · retry 1 of 2\n",
				"↻ overloaded (529) · retrying in 0.1s · retry 1 of 2\n",
				"↻ overloaded (529) · switching to gpt-4o-mini · retrying in 0.1s\n",
				"↻ reply cut at the output limit · asking the model to continue (part 2 of at most 4)\n",
				"↻ rate limited (429) · retrying in 0.8s · retry 1 of 2\n",
				"› you: ■ stop (session/cancel)\n",
				"✗ rate limited (429) · wait cancelled after 0.",
				"✓ cancelled · 1 provider request",
				"✓ end_turn · 3 provider requests",
				"✓ end_turn · 3 provider requests · 1 tool call · ",
			}
			if live {
				// Shown, the cut reply is continued, never retried afresh.
				retries = append(retries, "↻ reply cut at the output limit · asking the model to continue (part 3 of at most 4)\n")
			} else {
				retries = append(retries, "↻ reply cut at the output limit · retrying with a larger output budget\n")
			}
			for _, want := range retries {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			if n := len(regexp.MustCompile(`(?m)^  ↻ waited 0\.\ds, retrying( from where the reply stopped)?$`).FindAllString(out, -1)); n != 6 {
				t.Errorf("%d \"waited\" lines, want one per retry with a wait (6)", n)
			}

			if n := summaryInt(t, out, "attempts made"); n != steps {
				t.Errorf("attempts made = %d, want %d (one per script step)", n, steps)
			}
			if !strings.Contains(out, "("+strconv.Itoa(steps)+" provider requests for 7 prompts)") {
				t.Errorf("summary does not count %d provider requests for 7 prompts:\n%s", steps, out)
			}
			if n := summaryInt(t, out, "scenes"); n != 7 || !strings.Contains(out, "7 of 7 as expected") {
				t.Errorf("scenes row: want 7 of 7 as expected:\n%s", out)
			}
			if !strings.Contains(out, "9 (RATE_LIMIT ×2, TRANSPORT ×2, TIMEOUT ×1, OVERLOADED ×2, truncated ×2)") {
				t.Errorf("faults met row is wrong:\n%s", out)
			}
			if !strings.Contains(out, "\n  tool calls run         1 (read_file ×1)\n") {
				t.Errorf("tool calls run row: want 1 (read_file ×1):\n%s", out)
			}
			if n := summaryInt(t, out, "shown, then discarded"); n != 0 {
				t.Errorf("shown, then discarded = %d characters, want 0", n)
			}
			// What the failed attempts streamed before they failed: the
			// dropped and stalled attempts' first chunks and the first,
			// truncated reply.
			failed := 0
			for _, sc := range def.Scenes {
				for _, st := range sc.Steps {
					if st.DropAfter != nil || st.StallAfter != nil {
						failed += utf8.RuneCountInString(demoShownPrefix(st))
					}
				}
			}
			cut := truncated.Steps[0].Text
			failed += utf8.RuneCountInString(cut)
			if live {
				if summaryHas(out, "held back") {
					t.Errorf("live, the summary has a held back row:\n%s", out)
				}
				// Live, the truncated reply was shown, then continued twice:
				// the first time by a restart, of which only the new end
				// showed.
				want := failed + utf8.RuneCountInString(strings.TrimPrefix(truncated.Steps[1].Text, cut))
				if n := summaryInt(t, out, "continued, not resent"); n != want {
					t.Errorf("continued, not resent = %d characters, want %d", n, want)
				}
			} else {
				if summaryHas(out, "continued, not resent") {
					t.Errorf("held, the summary has a continued row:\n%s", out)
				}
				if n := summaryInt(t, out, "held back"); n != failed {
					t.Errorf("held back = %d characters, want %d (the failed attempts' text)", n, failed)
				}
			}
			m := regexp.MustCompile(`(?m)^  time spent waiting\s+(\d+\.\d)s$`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no time spent waiting row:\n%s", out)
			}
			// Waits: 0.1 × 6 + ~0.15 (the cancel) at --fast.
			if w, _ := strconv.ParseFloat(m[1], 64); w < 0.5 || w > 5 {
				t.Errorf("time spent waiting = %ss, want about 0.7s", m[1])
			}
			logPath := summaryLogPath(t, out)
			if !strings.HasPrefix(logPath, state) {
				t.Errorf("session log %s is not under --state-dir %s", logPath, state)
			}
			if _, err := os.Stat(logPath); err != nil {
				t.Errorf("session log: %v", err)
			}
			checkDemoToolScene(t, out, logPath, demoSceneNamed(t, def, demoToolTitle), live)
			if took > 20*time.Second {
				t.Errorf("demo --fast took %s", took)
			}
		})
	}
}

const (
	demoDroppedTitle   = "A dropped stream"
	demoTruncatedTitle = "A truncated reply"
	demoToolTitle      = "A dropped stream, after a tool call"
)

// demoShownPrefix is the text a dropped or stalled mock step streams
// before it fails: its first drop_after (stall_after) chunks, split as the
// mock splits them.
func demoShownPrefix(st mockprovider.Step) string {
	k := 0
	switch {
	case st.DropAfter != nil:
		k = *st.DropAfter
	case st.StallAfter != nil:
		k = *st.StallAfter
	}
	r := []rune(st.Text)
	n := min(max(st.Chunks, 1), len(r))
	return string(r[:min(k, n)*len(r)/n])
}

// demoReplies reads the replies in plain demo output: each "rebound: "
// line joined with its continuation lines ("        …", after the retry
// lines that interrupted it), without the "…" that marks where it stopped.
func demoReplies(out string) []string {
	var replies []string
	open := false
	for l := range strings.Lines(out) {
		l = strings.TrimSuffix(l, "\n")
		switch {
		case strings.HasPrefix(l, "rebound: "):
			replies = append(replies, strings.TrimPrefix(l, "rebound: "))
			open = true
		case open && strings.HasPrefix(l, "        …"):
			last := &replies[len(replies)-1]
			*last = strings.TrimSuffix(*last, "…") + strings.TrimPrefix(l, "        …")
		case open && strings.HasPrefix(l, "  ↻ "):
		default:
			open = false
		}
	}
	return replies
}

func demoCountEqual(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// demoSceneOutput is the scene's part of plain demo output, from its title
// to the blank line after it.
func demoSceneOutput(t *testing.T, out string, sc scene) string {
	t.Helper()
	i := strings.Index(out, "] "+sc.Title+"\n")
	if i < 0 {
		t.Fatalf("no scene %q in the output:\n%s", sc.Title, out)
	}
	scene := out[i:]
	if j := strings.Index(scene, "\n\n"); j >= 0 {
		scene = scene[:j+1]
	}
	return scene
}

func summaryHas(out, key string) bool {
	return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(key) + `\s`).MatchString(out)
}

func demoSceneNamed(t *testing.T, def *definition, title string) scene {
	t.Helper()
	for _, sc := range def.Scenes {
		if sc.Title == title {
			return sc
		}
	}
	t.Fatalf("the built-in demo has no scene %q", title)
	return scene{}
}

// checkDemoToolScene: in the scene where a stream drops after a tool ran,
// the tool ran exactly once (one tool/call in the log, one line on
// screen), the dropped attempt streamed text (live, shown and gone on from;
// held, never shown), the reply reads once, and the demo's project is gone.
func checkDemoToolScene(t *testing.T, out, logPath string, sc scene, live bool) {
	t.Helper()
	if len(sc.Steps) != 3 || len(sc.Steps[0].ToolCalls) != 1 || sc.Steps[1].DropAfter == nil {
		t.Fatalf("the tool scene is not a tool call, a dropped step and a reply: %+v", sc.Steps)
	}
	call := sc.Steps[0].ToolCalls[0]
	if n := strings.Count(out, "⚙ Read `README.md` · completed · Read README.md ("); n != 1 {
		t.Errorf("%d lines for the read_file call, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "⚙ Read `README.md` · pending") || strings.Contains(out, "never finished") {
		t.Errorf("a tool call without its final status:\n%s", out)
	}
	// The scene's lines in order: prompt, the model's sentence, the tool,
	// the retry, the reply, the outcome. Live, the reply's first words
	// come before the retry, and the model's restart is trimmed to what
	// is new.
	scene := demoSceneOutput(t, out, sc)
	shown := demoShownPrefix(sc.Steps[1])
	reply := `  ↻ connection dropped · retrying in 0\.1s · retry 1 of 2\n` +
		`  ↻ waited 0\.\ds, retrying\n` +
		`rebound: ` + regexp.QuoteMeta(sc.Steps[2].Text) + `\n`
	if live {
		reply = `rebound: ` + regexp.QuoteMeta(shown) + `…\n` +
			`  ↻ connection dropped · retrying in 0\.1s · retry 1 of 2\n` +
			`  ↻ waited 0\.\ds, retrying from where the reply stopped\n` +
			`        …` + regexp.QuoteMeta(strings.TrimPrefix(sc.Steps[2].Text, shown)) + `\n`
	}
	order := regexp.MustCompile(`(?s)› you: ` + regexp.QuoteMeta(sc.Prompt) + `\n` +
		`rebound: ` + regexp.QuoteMeta(sc.Steps[0].Text) + `\n` +
		`  ⚙ Read ` + "`README.md`" + ` · completed · [^\n]*\n` +
		reply +
		`  ✓ end_turn · 3 provider requests · 1 tool call · \d+\.\ds\n$`)
	if !order.MatchString(scene) {
		t.Errorf("the tool scene does not read prompt, sentence, tool, retry, reply, outcome:\n%s", scene)
	}
	if n := strings.Count(scene, shown); n != 1 {
		t.Errorf("the reply's first words %q show %d times, want once:\n%s", shown, n, scene)
	}

	ld, err := session.Load(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var calls, results []string
	// The log keeps no chunks: the dropped attempt's step/end counts them.
	var failed [][2]int // each failed attempt's characters: streamed and held back, shown
	for _, ev := range ld.Events {
		switch ev.Type {
		case session.TypeToolCall:
			var c session.ToolCall
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				t.Fatal(err)
			}
			calls = append(calls, c.ToolCallID+" "+c.Name+" "+c.Title)
		case session.TypeToolResult:
			var r session.ToolResult
			if err := json.Unmarshal(ev.Data, &r); err != nil {
				t.Fatal(err)
			}
			results = append(results, r.ToolCallID+" "+r.Status)
		case session.TypeStepEnd:
			var e session.StepEnd
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Outcome == session.OutcomeFailed {
				failed = append(failed, [2]int{e.StreamedChars, e.ShownChars})
			}
		}
	}
	if want := []string{call.ID + " read_file Read `README.md`"}; !slices.Equal(calls, want) {
		t.Errorf("tool/call events %q, want %q: the tool ran once", calls, want)
	}
	if want := []string{call.ID + " completed"}; !slices.Equal(results, want) {
		t.Errorf("tool/result events %q, want %q", results, want)
	}
	// The dropped attempt did stream text: live, it was shown (and the
	// reply went on from it); held, it was not.
	want := [2]int{utf8.RuneCountInString(shown), 0} // streamed and held back, shown
	if live {
		want = [2]int{0, utf8.RuneCountInString(shown)}
	}
	if !slices.Contains(failed, want) {
		t.Errorf("failed attempts' step/end (characters streamed and held back, shown): %v; want one with %v", failed, want)
	}

	m := regexp.MustCompile(`(?m)^  project   (\S+) \(README\.md\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no project line in the header:\n%s", out)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the demo's project %s is still there (%v)", m[1], err)
	}
}

// Without --state-dir the session log lands in a new temporary directory,
// which is kept.
func TestRun_DefaultStateDirIsKept(t *testing.T) {
	skipShortDemo(t)
	script := filepath.Join(t.TempDir(), "hello.json")
	if err := os.WriteFile(script, []byte(`{"steps": [{"text": "Hi."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemo(t, demoEnv(t, nil), Options{Script: script})
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	logPath := summaryLogPath(t, out)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(filepath.Dir(logPath))) })
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("session log: %v", err)
	}
	if !strings.Contains(filepath.Base(filepath.Dir(filepath.Dir(logPath))), "rebound-demo-") {
		t.Errorf("session log %s is not in a rebound-demo- temporary directory", logPath)
	}
}

func TestRun_ScriptDefinition(t *testing.T) {
	skipShortDemo(t)
	t.Parallel() // a child process each, paced in real time; no globals
	dir := t.TempDir()
	def := `{
  "recovery": {"jitter": 0, "initial_delay": "100ms", "max_retries": 1},
  "scenes": [
    {"title": "Server error", "prompt": "First question",
     "steps": [{"status": 503, "headers": {"Retry-After-Ms": "200"}}, {"text": "First answer.", "chunks": 2}],
     "expect": "end_turn"},
    {"title": "Gives up", "prompt": "Second question",
     "steps": [{"status": 500}, {"status": 500}],
     "expect": "error"}
  ]
}`
	path := filepath.Join(dir, "demo.json")
	if err := os.WriteFile(path, []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemo(t, demoEnv(t, nil), Options{Fast: true, Script: path, StateDir: dir})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"[1/2] Server error\n",
		"› you: First question\n",
		"↻ server error (503) · retrying in 0.0s · retry 1 of 1\n", // retry-after-ms 200 × 0.1
		"rebound: First answer.\n",
		"[2/2] Gives up\n",
		"↻ server error (500) · retrying in 0.0s · retry 1 of 1\n",
		"rebound: ✗ The provider had a server error (500); gave up after 1 retry",
		"✓ error · 2 provider requests",
		"2 of 2 as expected",
		"script    " + path,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := summaryInt(t, out, "attempts made"); n != 4 {
		t.Errorf("attempts made = %d, want 4", n)
	}
	if n := summaryInt(t, out, "shown, then discarded"); n != 0 {
		t.Errorf("shown, then discarded = %d", n)
	}
}

// A plain mock script: prompts go out one at a time until its steps are
// used up. Its dropped reply is gone on from (live) or held back (held);
// either way nothing shown is discarded.
func TestRun_ScriptMock(t *testing.T) {
	skipShortDemo(t)
	t.Parallel() // a child process each, paced in real time; no globals
	dir := t.TempDir()
	path := filepath.Join(dir, "mock.json")
	script := `{"steps": [{"status": 429, "headers": {"Retry-After": "1"}}, {"text": "Plain reply.", "chunks": 2}, {"text": "Half of it", "chunks": 2, "drop_after": 1}, {"text": "Second reply."}]}`
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode  string
		reply []string // the second prompt's reply, as printed
		row   string   // the summary row that counts the dropped attempt's "Half "
	}{
		// The mock does not read the request: its "continuation" is just
		// the next step's text, which live mode shows after what was shown.
		{"live", []string{"rebound: Half …\n", "  ↻ waited 0.1s, retrying from where the reply stopped\n        …Second reply.\n"}, "continued, not resent"},
		{"held", []string{"  ↻ waited 0.1s, retrying\nrebound: Second reply.\n"}, "held back"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			code, out, stderr := runDemo(t, demoEnv(t, nil), Options{Fast: true, Streaming: c.mode, Script: path, StateDir: dir})
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
			for _, want := range append([]string{
				"a mock script of 4 steps",
				"› you: Hello (prompt 1)\n",
				"↻ rate limited (429) · retrying in 0.1s · retry 1 of 2\n",
				"rebound: Plain reply.\n",
				"› you: Hello (prompt 2)\n",
				"↻ connection dropped",
			}, c.reply...) {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "prompt 3") || strings.Contains(out, "as expected") {
				t.Errorf("a third prompt, or expectations, for a plain script:\n%s", out)
			}
			if n := summaryInt(t, out, "attempts made"); n != 4 {
				t.Errorf("attempts made = %d, want 4", n)
			}
			if n := summaryInt(t, out, c.row); n != len("Half ") {
				t.Errorf("%s = %d, want %d", c.row, n, len("Half "))
			}
			if n := summaryInt(t, out, "shown, then discarded"); n != 0 {
				t.Errorf("shown, then discarded = %d, want 0", n)
			}
		})
	}
}

// A scene that ends otherwise than expected makes the demo fail; so does a
// scene that leaves steps for the next one.
func TestRun_UnexpectedOutcome(t *testing.T) {
	skipShortDemo(t)
	t.Parallel() // a child process each, paced in real time; no globals
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mismatch := write("mismatch.json", `{"scenes": [{"prompt": "Hi", "steps": [{"text": "Hello."}], "expect": "cancelled"}]}`)
	code, out, stderr := runDemo(t, demoEnv(t, nil), Options{Fast: true, Script: mismatch, StateDir: dir})
	if code != 1 || !strings.Contains(out, "✗ end_turn · 1 provider request") || !strings.Contains(out, "(expected cancelled)") ||
		!strings.Contains(stderr, "not every scene ended as expected") || !strings.Contains(out, "0 of 1 as expected") {
		t.Errorf("expectation mismatch: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}

	steps := write("steps.json", `{"scenes": [{"prompt": "Hi", "steps": [{"text": "Hello."}, {"text": "Meant for nobody."}]}, {"prompt": "Again", "steps": [{"text": "Bye."}]}]}`)
	code, _, stderr = runDemo(t, demoEnv(t, nil), Options{Fast: true, Script: steps, StateDir: dir})
	if code != 1 || !strings.Contains(stderr, "scene 1 (Scene 1) made 1 provider requests but has 2 steps") {
		t.Errorf("unused steps: exit %d\nstderr:\n%s", code, stderr)
	}
}

func TestRun_BadScript(t *testing.T) {
	dir := t.TempDir()
	e := env{getenv: func(k string) string {
		if k == "REBOUND_DEMO_CHILD" {
			return "/nonexistent/rebound"
		}
		return ""
	}}
	for _, c := range []struct{ name, script, want string }{
		{"step", `{"scenes": [{"prompt": "Hi", "steps": [{"status": 429, "text": "x"}]}]}`, "scenes[0]: mock script: steps[0]: text: cannot be combined with status 429"},
		{"prompt", `{"scenes": [{"steps": []}]}`, "scenes[0]: prompt: missing"},
		{"expect", `{"scenes": [{"prompt": "Hi", "steps": [], "expect": "done"}]}`, `expect: "done" is not one of`},
		{"unknown", `{"scenes": [{"prompt": "Hi", "stpes": []}]}`, `unknown field "stpes"`},
		{"mock", `{"steps": [{"stauts": 500}]}`, `neither a demo definition (no "scenes") nor a valid mock script`},
		{"config", `{"recovery": {"max_retries": -1}, "scenes": [{"prompt": "Hi", "steps": []}]}`, "recovery.max_retries"},
		{"project", `{"project": {"../x": ""}, "scenes": [{"prompt": "Hi", "steps": []}]}`, `project: "../x" is not a relative path inside the project`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".json")
			if err := os.WriteFile(path, []byte(c.script), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runDemo(t, e, Options{Script: path, StateDir: dir})
			if code != 1 || !strings.Contains(stderr, path) || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 1 naming %s and %q", code, stderr, path, c.want)
			}
		})
	}
	code, _, stderr := runDemo(t, e, Options{Script: filepath.Join(dir, "missing.json")})
	if code != 1 || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

// An agent that dies is reported, with its last log lines, as exit 1.
func TestRun_AgentDies(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "fake-rebound")
	if err := os.WriteFile(child, []byte("#!/bin/sh\necho 'fatal: something broke' >&2\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	e := env{getenv: func(k string) string {
		if k == "REBOUND_DEMO_CHILD" {
			return child
		}
		return ""
	}}
	code, _, stderr := runDemo(t, e, Options{Fast: true, StateDir: dir})
	if code != 1 || !strings.Contains(stderr, "the agent exited unexpectedly") || !strings.Contains(stderr, "fatal: something broke") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// On a terminal the wait is a live line redrawn in place, in colour unless
// NO_COLOR is set.
func TestRun_Terminal(t *testing.T) {
	skipShortDemo(t)
	old := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = old })

	dir := t.TempDir()
	path := filepath.Join(dir, "mock.json")
	if err := os.WriteFile(path, []byte(`{"steps": [{"status": 429, "headers": {"retry-after-ms": "450"}}, {"text": "Done."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemo(t, demoEnv(t, nil), Options{Script: path, StateDir: dir})
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"\r\x1b[2K", "\x1b[33m  ↻ rate limited (429) · retrying in 0.", "rate limited (429) · retried after 0.", "\x1b[1;32mrebound:\x1b[0m Done.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	if strings.Count(out, "retrying in 0.") < 2 {
		t.Errorf("the countdown was not redrawn:\n%q", out)
	}

	code, out, _ = runDemo(t, demoEnv(t, map[string]string{"NO_COLOR": "1"}), Options{Script: path, StateDir: dir})
	if code != 0 || strings.Contains(out, "\x1b[3") || strings.Contains(out, "\x1b[1") || !strings.Contains(out, "\r\x1b[2K") {
		t.Errorf("NO_COLOR: exit %d, want in-place updates without colour:\n%q", code, out)
	}
}

// On a terminal, a reply that a retry interrupts goes on on its own line,
// where it stopped: the countdown shows below it meanwhile, and the retry is
// noted under it afterwards.
func TestRun_TerminalDroppedReply(t *testing.T) {
	skipShortDemo(t)
	old := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = old })

	dir := t.TempDir()
	path := filepath.Join(dir, "mock.json")
	// The retry starts the reply over; only its new end shows (what was
	// shown is long enough to be certainly repeated).
	if err := os.WriteFile(path, []byte(`{"steps": [{"text": "One two three four five six seven eight nine ten.", "chunks": 2, "drop_after": 1}, {"text": "One two three four five six seven eight nine ten."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemo(t, demoEnv(t, map[string]string{"NO_COLOR": "1"}), Options{Fast: true, Script: path, StateDir: dir})
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"rebound: One two three four five \x1bD\x1bM\x1b7\x1bD\r", // parked at its end
		"\r\x1b[2K  ↻ connection dropped · retrying in 0.",        // the countdown below
		"\x1b8six seven eight nine ten.\n",                        // on where it stopped
		"\n  ↻ connection dropped · retried after 0.",
		" · retry 1 of 2 · the reply went on where it stopped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	screen := demoVT(out, 80, 24)
	if !slices.Contains(screen, "rebound: One two three four five six seven eight nine ten.") || slices.Contains(screen, "rebound: six seven eight nine ten.") {
		t.Errorf("the reply does not read as one line on the screen:\n%s", strings.Join(screen, "\n"))
	}
}

// The parked reply, drawn on terminals of a few sizes (the reply ending at
// the right margin; a screen that scrolls), and in plain output.
func TestScreen_InterruptedReply(t *testing.T) {
	oldWidth := termWidth
	t.Cleanup(func() { termWidth = oldWidth })
	play := func(o *screen, exhausted bool) {
		o.line("› you: Count to four")
		o.replyText("msg_1", "One two t")
		o.interrupt()
		o.setLive("", "  ↻ connection dropped · retrying in 1.0s · retry 1 of 2")
		if !o.note("connection dropped · retried after 1.0s") {
			o.line("  ↻ waited 1.0s, retrying")
		}
		o.setLive("", "  … waiting for the provider · 0.1s")
		if exhausted {
			o.line("  ✗ recovery gave up")
			return
		}
		o.replyText("msg_1", "hree four.")
		o.line("  ✓ end_turn")
	}
	for _, c := range []struct {
		name          string
		width, height int
		exhausted     bool
		want          []string // the screen's rows
	}{
		{"wide", 80, 24, false, []string{
			"› you: Count to four",
			"rebound: One two three four.",
			"  ↻ connection dropped · retried after 1.0s · the reply went on where it stopped",
			"  ✓ end_turn"}},
		{"scrolls", 80, 2, false, []string{
			"› you: Count to four",
			"rebound: One two three four.",
			"  ↻ connection dropped · retried after 1.0s · the reply went on where it stopped",
			"  ✓ end_turn"}},
		// "rebound: One two t" fills the line: the reply goes on at the
		// start of the next, as the terminal wraps it.
		{"at the margin", 18, 24, false, []string{
			"› you: Count to fo", "ur",
			"rebound: One two t", "hree four.",
			"  ↻ connection dro", "pped · retried aft", "er 1.0s · the repl", "y went on where it", " stopped",
			"  ✓ end_turn"}},
		{"gives up", 80, 24, true, []string{
			"› you: Count to four",
			"rebound: One two t",
			"  ↻ connection dropped · retried after 1.0s",
			"  ✗ recovery gave up"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			termWidth = func(io.Writer) int { return c.width }
			var b bytes.Buffer
			o := &screen{w: &b, tty: true}
			play(o, c.exhausted)
			if got := demoVT(b.String(), c.width, c.height); !slices.Equal(got, c.want) {
				t.Errorf("screen:\n%s\nwant:\n%s\n(output %q)", strings.Join(got, "\n"), strings.Join(c.want, "\n"), b.String())
			}
		})
	}

	var b bytes.Buffer
	play(&screen{w: &b}, false)
	want := "› you: Count to four\n" +
		"rebound: One two t…\n" +
		"  ↻ waited 1.0s, retrying\n" +
		"        …hree four.\n" +
		"  ✓ end_turn\n"
	if b.String() != want {
		t.Errorf("plain output:\n%s\nwant:\n%s", b.String(), want)
	}
}

// demoVT plays terminal output on a width×height screen, as a VT100 does
// (just the controls the demo writes), and returns every row written,
// scrolled off or not, without trailing blanks.
func demoVT(out string, width, height int) []string {
	blank := func() []rune { return []rune(strings.Repeat(" ", width)) }
	var gone [][]rune
	screen := make([][]rune, height)
	for i := range screen {
		screen[i] = blank()
	}
	row, col, wrap := 0, 0, false
	var saved [3]int
	down := func() {
		if row == height-1 {
			gone = append(gone, screen[0])
			screen = append(screen[1:], blank())
		} else {
			row++
		}
	}
	for rest := out; rest != ""; {
		if m := regexp.MustCompile(`^\x1b\[([0-9;]*)([A-Za-z])`).FindStringSubmatch(rest); m != nil {
			if m[2] == "K" && m[1] == "2" {
				screen[row] = blank()
			}
			rest = rest[len(m[0]):]
			continue
		}
		if strings.HasPrefix(rest, "\x1b") && len(rest) > 1 {
			switch rest[1] {
			case 'D':
				down()
				wrap = false
			case 'M':
				row, wrap = max(row-1, 0), false
			case '7':
				saved = [3]int{row, col, map[bool]int{true: 1}[wrap]}
			case '8':
				row, col, wrap = saved[0], saved[1], saved[2] == 1
			}
			rest = rest[2:]
			continue
		}
		r, n := utf8.DecodeRuneInString(rest)
		rest = rest[n:]
		switch r {
		case '\r':
			col, wrap = 0, false
		case '\n': // a terminal's output processing adds the carriage return
			down()
			col, wrap = 0, false
		default:
			if wrap {
				down()
				col, wrap = 0, false
			}
			screen[row][col] = r
			if col == width-1 {
				wrap = true
			} else {
				col++
			}
		}
	}
	var rows []string
	for _, l := range append(gone, screen...) {
		rows = append(rows, strings.TrimRight(string(l), " "))
	}
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

// The built-in definition parses, every scene expects an outcome, and its
// config is one the agent accepts.
func TestDefinition_Default(t *testing.T) {
	def, err := parseDefinition(defaultJSON)
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Scenes) != 7 {
		t.Errorf("%d scenes, want 7", len(def.Scenes))
	}
	if !strings.HasPrefix(def.Project["README.md"], "# Rebound\n") {
		t.Errorf("the demo project has no README.md: %v", def.Project)
	}
	for _, fast := range []bool{false, true} {
		if fast {
			def.scale(fastScale)
		}
		cfgText, err := def.configTOML()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, cfgText, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(config.Flags{}, func(k string) string {
			return map[string]string{"REBOUND_CONFIG": path, "REBOUND_STATE_DIR": "/tmp/x"}[k]
		}, "")
		if err != nil {
			t.Fatalf("fast=%v: %v\n%s", fast, err, cfgText)
		}
		wantIdle := 2 * time.Second
		if fast {
			wantIdle = 200 * time.Millisecond
		}
		if got := time.Duration(cfg.Recovery.StreamIdleTimeout); got != wantIdle || cfg.Recovery.Jitter != 0 || cfg.Recovery.FallbackModel != "gpt-4o-mini" || cfg.Provider.Model != "gpt-4o" {
			t.Errorf("fast=%v: config %+v", fast, cfg.Recovery)
		}
	}
}

func TestDefinition_ScaleStep(t *testing.T) {
	st := mockprovider.Step{Status: 429, Headers: map[string]string{"Retry-After": "2", "X-Request-Id": "r"}, Delay: "1s"}
	scaleStep(&st, 0.1)
	want := map[string]string{"retry-after-ms": "200", "X-Request-Id": "r"}
	if got, _ := json.Marshal(st.Headers); string(got) != mustJSONString(t, want) || st.Delay != "100ms" {
		t.Errorf("scaled step: headers %v, delay %q", st.Headers, st.Delay)
	}
	st = mockprovider.Step{Status: 503, Headers: map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}}
	scaleStep(&st, 0.1)
	if st.Headers["Retry-After"] == "" {
		t.Errorf("an HTTP-date Retry-After was changed: %v", st.Headers)
	}
	m := scaleMap(map[string]any{"initial_delay": "1s", "fallback_model": "m", "truncation": map[string]any{"max_continuations": 2}, "rules": []any{map[string]any{"delay": "2s"}}}, 0.1)
	if m["initial_delay"] != "100ms" || m["fallback_model"] != "m" || m["rules"].([]any)[0].(map[string]any)["delay"] != "200ms" {
		t.Errorf("scaled recovery: %v", m)
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The built-in demo at full speed, as `go run ./cmd/rebound demo` plays it:
// under 20 s. Slow, so only with REBOUND_DEMO_FULL=1.
func TestRun_DefaultUnder20s(t *testing.T) {
	if os.Getenv("REBOUND_DEMO_FULL") == "" {
		t.Skip("set REBOUND_DEMO_FULL=1 to play the full-length demo")
	}
	e := demoEnv(t, nil)
	start := time.Now()
	code, out, stderr := runDemo(t, e, Options{StateDir: t.TempDir()})
	took := time.Since(start)
	t.Logf("demo took %s\n%s", took, out)
	if code != 0 || took > 20*time.Second {
		t.Errorf("exit %d after %s\nstderr:\n%s", code, took, stderr)
	}
}

// A scene of your own with an edit and a command: the demo answers each
// permission request with allow once, shows every tool call once with its
// final status, works in the project the definition describes, and counts
// it all in the summary.
func TestRun_ScriptToolsWithPermission(t *testing.T) {
	skipShortDemo(t)
	t.Parallel() // a child process each, paced in real time; no globals
	dir := t.TempDir()
	def := `{
  "project": {"notes/todo.txt": "buy milk\n"},
  "scenes": [
    {"title": "An edit and a command", "prompt": "Add eggs to my list",
     "steps": [
       {"text": "Editing it.", "tool_calls": [{"id": "e1", "name": "edit_file", "arguments": "{\"path\": \"notes/todo.txt\", \"old_text\": \"milk\", \"new_text\": \"eggs and milk\"}"}]},
       {"tool_calls": [{"id": "r1", "name": "run_command", "arguments": "{\"command\": \"cat notes/todo.txt\"}"},
                       {"id": "x1", "name": "read_file", "arguments": "{\"path\": \"../outside.txt\"}"}]},
       {"text": "Your list now says: buy eggs and milk.", "chunks": 2}
     ],
     "expect": "end_turn"}
  ]
}`
	path := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(path, []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemo(t, demoEnv(t, nil), Options{Fast: true, Script: path, StateDir: dir})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"(notes/todo.txt), the session's cwd; removed at the end\n",
		// The permission request's title names the change's diff, and the
		// command's directory (the project's, a temporary one).
		"rebound: Editing it.\n" +
			"  ? Edit `notes/todo.txt`; the change is in the diff attached to this request · permission asked · the demo answers \"Allow\" for you\n" +
			"  ⚙ Edit `notes/todo.txt` · completed · diff of notes/todo.txt\n" +
			"  ? Run `cat notes/todo.txt` in `",
		"` · permission asked · the demo answers \"Allow\" for you\n" +
			"  ⚙ Run `cat notes/todo.txt` · completed · buy eggs and milk",
		" · failed · path \"../outside.txt\" is outside the workspace (",
		"rebound: Your list now says: buy eggs and milk.\n",
		"✓ end_turn · 3 provider requests · 3 tool calls · ",
		"\n  tool calls run         3 (edit_file ×1, run_command ×1, read_file ×1)\n",
		"\n  permission asked       2 times, answered by the demo: allow_once ×2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	ld, err := session.Load(summaryLogPath(t, out))
	if err != nil {
		t.Fatal(err)
	}
	var perms []string
	for _, ev := range ld.Events {
		if ev.Type == session.TypePermission {
			var p session.Permission
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				t.Fatal(err)
			}
			perms = append(perms, p.ToolCallID+" "+p.Outcome)
		}
	}
	if want := []string{"e1 allow_once", "r1 allow_once"}; !slices.Equal(perms, want) {
		t.Errorf("permission events %q, want %q", perms, want)
	}
}

// The demo's client answers every request the agent makes, so that the
// agent never waits: permission with allow once (the allow_once option
// the agent offers), anything else with method not found.
func TestClient_AnswersAgentRequests(t *testing.T) {
	a := newFakeAgent(t)
	for _, c := range []struct {
		msg, picked, want string
	}{
		{`{"id": 7, "method": "session/request_permission", "params": {"toolCall": {"toolCallId": "c1", "title": "Edit x"}, "options": [{"optionId": "no", "name": "Reject", "kind": "reject_once"}, {"optionId": "yes-once", "name": "Allow", "kind": "allow_once"}]}}`,
			"yes-once", `{"id":7,"jsonrpc":"2.0","result":{"outcome":{"optionId":"yes-once","outcome":"selected"}}}`},
		{`{"id": "p", "method": "session/request_permission", "params": {}}`,
			"allow_once", `{"id":"p","jsonrpc":"2.0","result":{"outcome":{"optionId":"allow_once","outcome":"selected"}}}`},
		{`{"id": 8, "method": "fs/read_text_file", "params": {"path": "/x"}}`,
			"", `{"error":{"code":-32601,"message":"the demo client does not offer fs/read_text_file"},"id":8,"jsonrpc":"2.0"}`},
		{`{"id": 9, "method": "terminal/create", "params": {}}`,
			"", `{"error":{"code":-32601,"message":"the demo client does not offer terminal/create"},"id":9,"jsonrpc":"2.0"}`},
	} {
		a.write(c.msg)
		got := a.read()
		picked := ""
		if c.picked != "" {
			ev := <-a.c.events
			if ev.permission == nil {
				t.Fatalf("%s: event %+v, want the permission request", c.msg, ev)
			}
			picked = ev.chosen.OptionID
		}
		if got != c.want || picked != c.picked {
			t.Errorf("%s:\n answered %s (picked %q)\n want     %s (picked %q)", c.msg, got, picked, c.want, c.picked)
		}
	}
}

// What the agent sends reaches the demo in the agent's order: the updates
// sent before a request's answer come before it.
func TestClient_KeepsOrder(t *testing.T) {
	a := newFakeAgent(t)
	if err := a.c.send("session/prompt", map[string]string{"sessionId": "s"}); err != nil {
		t.Fatal(err)
	}
	if got, want := a.read(), `{"id":0,"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"s"}}`; got != want {
		t.Fatalf("sent %s, want %s", got, want)
	}
	for _, text := range []string{"One ", "two."} {
		a.write(`{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "` + text + `"}}}}`)
	}
	a.write(`{"jsonrpc": "2.0", "method": "session/request_permission", "id": 3, "params": {"toolCall": {"toolCallId": "c1"}, "options": []}}`)
	a.read() // the answer
	a.write(`{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn"}}`)
	var got []string
	for len(got) < 4 {
		switch ev := <-a.c.events; {
		case ev.update != nil:
			got = append(got, ev.update.Content.Text)
		case ev.permission != nil:
			got = append(got, "permission "+ev.permission.ToolCall.ToolCallID)
		case ev.answer != nil:
			got = append(got, ev.answer.method+" "+string(ev.answer.result))
		}
	}
	if want := []string{"One ", "two.", "permission c1", `session/prompt {"stopReason":"end_turn"}`}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A line that is not JSON-RPC ends the connection, and the demo says which.
func TestClient_LineNotJSONRPC(t *testing.T) {
	a := newFakeAgent(t)
	a.write("Segmentation fault")
	err := a.c.call(t.Context(), "initialize", map[string]any{}, new(json.RawMessage))
	if want := `initialize: the agent wrote a line that is not JSON-RPC: "Segmentation fault"`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// fakeAgent is the agent's end of a client's pipes (OS pipes, which
// buffer: neither end waits for the other to read).
type fakeAgent struct {
	t   *testing.T
	c   *editor
	in  *bufio.Reader // what the client sent
	out *os.File      // to the client
}

func newFakeAgent(t *testing.T) *fakeAgent {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &fakeAgent{t: t, c: newEditor(t.Context(), outR, inW), in: bufio.NewReader(inR), out: outW}
	t.Cleanup(func() {
		a.c.close()
		outW.Close()
		outR.Close()
		inR.Close()
	})
	return a
}

// write sends the client one line.
func (a *fakeAgent) write(line string) {
	if _, err := io.WriteString(a.out, line+"\n"); err != nil {
		a.t.Error(err)
	}
}

// read is the client's next line, its keys sorted.
func (a *fakeAgent) read() string {
	a.t.Helper()
	line, err := a.in.ReadBytes('\n')
	if err != nil {
		a.t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		a.t.Fatalf("%q: %v", line, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
