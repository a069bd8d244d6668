package agent

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// shownStatus is a status tool call as the editor last shows it.
type shownStatus struct {
	ID, Title, Status, Content string
}

// statusesShown folds e's updates of status tool calls into their last
// state, in the order they were first shown: an update leaves out what
// does not change (a title, the content).
func statusesShown(e *editor) []shownStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []shownStatus
	at := map[string]int{}
	for _, u := range e.updates {
		if !strings.HasPrefix(u.ToolCallID, statusIDPrefix) {
			continue
		}
		i, ok := at[u.ToolCallID]
		if !ok {
			i = len(out)
			at[u.ToolCallID] = i
			out = append(out, shownStatus{ID: u.ToolCallID})
		}
		s := &out[i]
		if u.Title != "" {
			s.Title = u.Title
		}
		if u.Status != "" {
			s.Status = string(u.Status)
		}
		if u.ToolContent != nil {
			var texts []string
			for _, c := range u.ToolContent {
				if c.Content != nil {
					texts = append(texts, c.Content.Text)
				}
			}
			s.Content = strings.Join(texts, "\n")
		}
	}
	return out
}

// statusScenario runs turns that show statuses live.
type statusScenario struct {
	name string
	// covers names the functions that show statuses (call showStatus)
	// the scenario makes show one.
	covers []string
	cfg    func(*Config)
	mcp    bool // the session has an MCP server, slow to fail
	run    func(t *testing.T, a *Agent, id string, c acp.Client)
}

func turns(texts ...string) func(t *testing.T, a *Agent, id string, c acp.Client) {
	return func(t *testing.T, a *Agent, id string, c acp.Client) {
		for _, text := range texts {
			// Some fail: that is what is shown, with the error.
			_, err := prompt1(t.Context(), a, id, text, c)
			if e, ok := c.(*editor); ok && err != nil {
				e.mu.Lock()
				e.errs = append(e.errs, err.Error())
				e.mu.Unlock()
			}
		}
	}
}

func answers(fs ...func(context.Context, llm.Request) (llm.Stream, error)) func(*Config) {
	return func(c *Config) { c.Provider = &script{answers: fs} }
}

func overloaded(context.Context, llm.Request) (llm.Stream, error) {
	return nil, &llm.Error{Status: 529, Type: "overloaded_error", Message: "Overloaded"}
}

func unauthorized(context.Context, llm.Request) (llm.Stream, error) {
	return nil, &llm.Error{Status: 401, Message: "Incorrect API key provided"}
}

var statusScenarios = []statusScenario{
	{name: "a wait, recovered", covers: []string{"scheduled", "started", "recovered"},
		cfg: answers(limited, text("ok")), run: turns("hi")},
	{name: "waits, given up", covers: []string{"ended", "closeOpen"},
		cfg: answers(limited), run: turns("hi")},
	{name: "failed at once", covers: []string{"ended"},
		cfg: answers(unauthorized), run: turns("hi")},
	{name: "cancelled during the wait", covers: []string{"ended"},
		cfg: answers(limited, text("ok")), run: func(t *testing.T, a *Agent, id string, c acp.Client) {
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				time.Sleep(time.Second)
				cancel()
			}()
			_, _ = prompt1(ctx, a, id, "hi", c)
		}},
	{name: "refused", covers: []string{"failed", "closeOpen"},
		cfg: answers(limited, filtered), run: turns("hi")},
	{name: "the fallback", covers: []string{"scheduled", "recovered"},
		cfg: func(c *Config) {
			answers(overloaded, text("ok"))(c)
			c.Recovery.FallbackModel, c.Recovery.FallbackAfter = "small", 1
		}, run: turns("hi")},
	{name: "a /retry wait", covers: []string{"scheduled", "started", "recovered"},
		cfg: answers(namedWait("2400"), text("Here it is.")), run: turns("hi", "/retry wait")},
	{name: "nearly full, summarised", covers: []string{"compactIfFull"},
		cfg: func(c *Config) {
			answers(usedReply(longAnswer, 900), text("They talked."), usedReply("Use a WaitGroup.", 100))(c)
			c.ContextWindow, c.Overflow = 1000, Overflow{KeepRecentMessages: 2, CompactAt: 0.9}
		}, run: turns("What is a goroutine?", "How do I wait for them?")},
	{name: "nearly full, not summarised", covers: []string{"compactIfFull"},
		cfg: func(c *Config) {
			answers(usedReply(longAnswer, 990), failSummary, usedReply("Use a WaitGroup.", 100))(c)
			c.ContextWindow, c.Overflow = 1000, Overflow{KeepRecentMessages: 2, CompactAt: 0.9}
		}, run: turns("What is a goroutine?", "How do I wait for them?")},
	// /compact answers its failure with an error of its own words, not a
	// provider's: a load says them as they were.
	{name: "a /compact that failed", covers: []string{"ended"},
		cfg: answers(text("ok"), failSummary), run: turns("hi", "/compact")},
	// A panic answers with an internal error of Rebound's own words.
	{name: "a turn that panicked", covers: []string{"ended"},
		cfg: answers(func(context.Context, llm.Request) (llm.Stream, error) {
			return funcStream(func() (llm.Chunk, error) { panic("provider exploded") }), nil
		}), run: turns("hi")},
	{name: "an MCP server starting, then not available", covers: []string{"waitMCP", "reportMCP"},
		cfg: answers(text("ok")), mcp: true, run: turns("hi")},
}

// start makes the scenario's agent (in synctest's bubble) and a session.
func (sc statusScenario) start(t *testing.T) (dir string, cfg Config, a *Agent, res acp.NewSessionResponse) {
	t.Helper()
	dir = t.TempDir()
	cfg = Config{StateDir: dir, Recovery: recovery.Config{Policy: recovery.Policy{
		MaxRetries: 1, InitialDelay: 3 * time.Second, MaxDelay: 3 * time.Second, MaxRetryAfter: 10 * time.Second, Retryable: recovery.DefaultRetryable}}}
	sc.cfg(&cfg)
	if sc.mcp {
		cfg.MCPConnect = func(context.Context, mcp.Spec) (mcp.Transport, error) {
			time.Sleep(2 * time.Second)
			return nil, errors.New("no such server")
		}
	}
	a = testAgent(t, cfg)
	req := acp.NewSessionRequest{Cwd: dir}
	if sc.mcp {
		req.McpServers = []acp.McpServer{{Name: "files", Command: "files-server"}}
	}
	res, err := a.NewSession(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return dir, cfg, a, res
}

// TestStatuses_ReplayedAsShown: every status Rebound shows live is
// recorded and shown again by a load as it was last shown, under the same
// id and where it was: one scenario per way a status is shown, and every
// function that shows one is covered by a scenario (a new one fails here
// until it is). A give-up is the exception: live, the prompt's error says
// why, and the card says only that it gave up (or there is none, when no
// card was open); a load, which has no error to show, shows a card with
// the error's words in its place, one per failed prompt. A session whose
// client was shown notices instead records the same statuses, which a
// load in a client without notices shows.
func TestStatuses_ReplayedAsShown(t *testing.T) {
	scenarios := append(slices.Clone(statusScenarios), holdScenarios()...)
	covered := map[string]bool{}
	for _, sc := range scenarios {
		for _, f := range sc.covers {
			covered[f] = true
		}
	}
	for _, f := range showers(t) {
		if !covered[f] {
			t.Errorf("%s shows a status, and no scenario here shows it: add one", f)
		}
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var replayedLive, fromNotices []shownStatus
			for _, notices := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					dir, cfg, a, res := sc.start(t)
					e := &editor{}
					var c acp.Client = e
					if notices {
						c = &capsEditor{caps: noticesCaps}
					}
					sc.run(t, a, res.SessionID, c)
					a.Close()

					b := testAgent(t, cfg)
					loaded := &editor{}
					if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: res.SessionID, Cwd: dir}, loaded); err != nil {
						t.Fatal(err)
					}
					replayed := statusesShown(loaded)
					if notices {
						fromNotices = replayed
						return
					}
					replayedLive = replayed
					live := statusesShown(e)
					if len(live) == 0 && len(e.errs) == 0 {
						t.Fatal("no status was shown live")
					}
					want, rest := asReplayed(t, live, e.errs)
					replayed = withoutGiveUps(t, replayed, rest)
					if diff := cmp.Diff(want, replayed, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("statuses replayed (+) differ from those shown live (-):\n%s", diff)
					}
				})
			}
			strip := func(s []shownStatus) []shownStatus {
				s = slices.Clone(s)
				for i := range s {
					s[i].ID = ""
				}
				return s
			}
			if diff := cmp.Diff(strip(replayedLive), strip(fromNotices)); diff != "" {
				t.Errorf("a session shown notices replays (+) other statuses than one shown status calls (-):\n%s", diff)
			}
		})
	}
}

// asReplayed is how a load shows the statuses shown live in a session
// whose failed prompts answered the errors errs: each card that ended
// saying it gave up carries the next error's words. The errors no card
// took are returned: their prompts failed with no card open.
func asReplayed(t *testing.T, live []shownStatus, errs []string) (want []shownStatus, rest []string) {
	t.Helper()
	want = slices.Clone(live)
	for i, s := range want {
		if s.Status != string(acp.ToolStatusFailed) || !strings.HasSuffix(s.Content, "the error below says why and what to do.") {
			continue
		}
		if len(errs) == 0 {
			t.Fatalf("card %q says it gave up, and no prompt failed", s.Title)
		}
		if strings.Contains(s.Content, errs[0]) || strings.Contains(s.Title, errs[0]) {
			t.Errorf("the give-up card %q repeats the error live", s.Title)
		}
		want[i].Title, want[i].Content = statusTitle(errs[0]), errs[0]
		errs = errs[1:]
	}
	return want, errs
}

// withoutGiveUps is replayed without the cards of give-ups no card was open
// for, which must be there, one per error in errs, in the error's words.
func withoutGiveUps(t *testing.T, replayed []shownStatus, errs []string) []shownStatus {
	t.Helper()
	for _, e := range errs {
		i := slices.IndexFunc(replayed, func(s shownStatus) bool {
			return s.Status == string(acp.ToolStatusFailed) && s.Title == statusTitle(e) && s.Content == e
		})
		if i < 0 {
			t.Errorf("no card replays the error %q", e)
			continue
		}
		replayed = slices.Delete(slices.Clone(replayed), i, i+1)
	}
	return replayed
}

// showers are the functions of the package that show a status.
func showers(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Name.Name == "showStatus" {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "showStatus" {
					out = append(out, fn.Name.Name)
					return false
				}
				return true
			})
		}
	}
	if len(out) == 0 {
		t.Fatal("found no function that shows a status")
	}
	return out
}

// A status a stop of Rebound left in progress is replayed as ended, and
// says why; its id is the one it had live.
func TestReplayedStatus_LeftInProgress(t *testing.T) {
	w := session.WaitStatus{Outcome: session.WaitInterrupted, Shown: &session.Status{StatusID: "rebound_status_x", Title: "Waiting for the MCP servers to start", State: session.StatusInProgress}}
	u := replayedStatus(w)
	if u.ToolCallID != "rebound_status_x" || u.Status != string(acp.ToolStatusFailed) || u.Title != "Waiting for the MCP servers to start, interrupted (Rebound stopped)" {
		t.Errorf("replayed %+v", u)
	}
}

// A recorded status id outside Rebound's namespace (a hand-edited log) is
// not shown as it is: it could pass for a call of the model's.
func TestReplayedStatus_IDStaysRebounds(t *testing.T) {
	w := session.WaitStatus{Seq: 9, Shown: &session.Status{StatusID: "call_0", Title: "t", State: session.StatusCompleted}}
	if u := replayedStatus(w); u.ToolCallID != statusIDPrefix+"replay_9" {
		t.Errorf("replayed id %q", u.ToolCallID)
	}
}

// retryCount finds the count of a retry in a status's words.
var retryCount = regexp.MustCompile(`retry \d+ of \d+`)

// TestStatuses_BodyAgreesWithTheFinalState: a status's content is updated
// with its title, so a client that shows only the content (codecompanion
// after a cancel, acpx's output) reads how it ended: once a status is
// completed or failed its content describes no wait still to come, counts
// as its title counts, and a cancelled one says it was cancelled.
func TestStatuses_BodyAgreesWithTheFinalState(t *testing.T) {
	for _, sc := range statusScenarios {
		t.Run(sc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, _, a, res := sc.start(t)
				e := &editor{}
				sc.run(t, a, res.SessionID, e)
				a.Close()
				for _, s := range statusesShown(e) {
					if s.Status == string(acp.ToolStatusInProgress) || s.Content == "" {
						continue
					}
					for _, waiting := range []string{"Retrying in", "Retrying now", "retrying now", "Waiting ", "running the turn again now"} {
						if strings.Contains(s.Content, waiting) {
							t.Errorf("%s status %q still says %q in its content:\n%s", s.Status, s.Title, waiting, s.Content)
						}
					}
					if tc, bc := retryCount.FindString(s.Title), retryCount.FindString(s.Content); tc != "" && tc != bc {
						t.Errorf("status %q counts %q, its content %q", s.Title, tc, bc)
					}
					if strings.HasSuffix(s.Title, ", cancelled") && !strings.HasPrefix(s.Content, "Cancelled") {
						t.Errorf("cancelled status %q has the content %q", s.Title, s.Content)
					}
				}
			})
		})
	}
}

// TestReplayedStatus_LogBeforeStatuses: a log written before statuses were
// recorded replays each retry chain in the words a live status ends with
// (recovery/words.go), title and content agreeing: recovered, gave up
// (with the count of retries, as live), cancelled waiting or running,
// interrupted, and still open when the log ends.
func TestReplayedStatus_LogBeforeStatuses(t *testing.T) {
	ld, err := session.Load("../session/testdata/before_statuses.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range session.WaitStatuses(ld.Events) {
		u := replayedStatus(w)
		body := ""
		if len(u.ToolContent) > 0 {
			body = strings.SplitN(u.ToolContent[0].Content.Text, "\n", 2)[0]
		}
		got = append(got, u.Status+" | "+u.Title+" | "+body)
	}
	want := []string{
		"completed | The provider had a server error (503), recovered on retry 1 of 2 | Recovered on retry 1 of 2.",
		"failed | Rate limited by the provider (429); gave up after 2 retries: slow down | Rate limited by the provider (429); gave up after 2 retries: slow down",
		"failed | The provider is overloaded (529), cancelled | Cancelled during the wait; retry 1 of 2 did not run.",
		"failed | The provider had a server error (500), cancelled | Cancelled during retry 1 of 2.",
		"failed | The connection to the provider failed, interrupted (Rebound stopped) | Rebound stopped during retry 1 of 2; the next prompt goes on from it.",
		"completed | The connection to the provider failed, recovered on retry 2 of 2 | Recovered on retry 2 of 2.",
		"failed | The provider had a server error (502), interrupted (Rebound stopped) | Rebound stopped during retry 1 of 2; the next prompt goes on from it.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed statuses (-want +got):\n%s", diff)
	}
}
