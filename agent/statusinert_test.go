package agent

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/internal/testkit/markdown"
	clip "github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// genProviderMessage is an error message a provider (or a proxy in front
// of it) could send: words, and markdown that would be a link, an image,
// HTML, an entity, a heading, a list, a quote or code in an editor that
// renders a card's text as markdown, with control characters and newlines.
func genProviderMessage(r *rand.Rand) string {
	pieces := []string{"word ", "rate_limit_exceeded ", "[link](http://x)", "![img](http://x/y.png)", "<http://x>", "<img src=x>",
		"&#x202e;", "&amp;", "`code`", "**b**", "_e_", "*e*", "\n# H\n", "\n- item", "\n> q", "\n    code", "\n---\n", "\n1. one",
		"\\", "\\[", "é", "\x1b[31m", "|a|b|\n|-|-|", "~~s~~", "\n[ref]: http://x\n", "[ref]", "]", "(", ")", "!", "\n\n", "\t", " "}
	var b strings.Builder
	for range 1 + r.IntN(10) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// Property: a status card (its title and its content, live and on
// replay) and a replayed give-up line show a provider's message as text
// only: whatever markdown it holds renders as itself in an editor that
// renders the card as markdown (Zed renders tool call titles and content
// so), no link, image, HTML, entity or block of its own; and its words are
// all shown.
func TestStatusCards_ProviderTextIsInert(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	for i := range 60 {
		msg := genProviderMessage(r)
		fail := func(status int) func(context.Context, llm.Request) (llm.Stream, error) {
			return func(context.Context, llm.Request) (llm.Stream, error) {
				return nil, &llm.Error{Status: status, Type: "invalid_request_error", Message: msg}
			}
		}
		answers := [][]func(context.Context, llm.Request) (llm.Stream, error){
			{fail(429), text("ok")}, {fail(429), fail(429)}, {fail(400)},
		}[i%3]
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Provider: &script{answers: answers}, StateDir: dir, WaitStatus: WaitStatusToolCall, Recovery: recovery.Config{Policy: recovery.Policy{
				MaxRetries: 1, InitialDelay: time.Second, MaxDelay: time.Second, Retryable: recovery.DefaultRetryable}}}
			a := testAgent(t, cfg)
			id := newSession(t, a)
			live := &editor{}
			_, _ = prompt1(t.Context(), a, id, "hi", live)
			a.Close()
			b := testAgent(t, cfg)
			loaded := &editor{}
			if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: dir}, loaded); err != nil {
				t.Fatal(err)
			}
			// Its words, but for a code span's backticks (and the spaces
			// it trims).
			bare := strings.NewReplacer("`", "", " ", "", "\n", "").Replace
			said := bare(clip.InertLine(msg, 1000))
			check := func(where, s string) {
				kinds, shown := markdown.Rendered(s)
				if len(kinds) > 0 || strings.ContainsFunc(shown, func(c rune) bool { return unicode.IsControl(c) && c != '\n' || unicode.Is(unicode.Cf, c) }) {
					t.Errorf("case %d: message %q: %s %q renders as %v: %q", i, msg, where, s, kinds, shown)
				}
				if strings.Contains(s, "The provider said: ") && !strings.Contains(bare(strings.Join(strings.Fields(shown), " ")), said) {
					t.Errorf("case %d: message %q: %s %q shows %q, not all its words", i, msg, where, s, shown)
				}
			}
			for name, e := range map[string]*editor{"live": live, "replayed": loaded} {
				for _, u := range e.updates {
					switch {
					case strings.HasPrefix(u.ToolCallID, statusIDPrefix):
						check(name+" card title", u.Title)
						for _, c := range u.ToolContent {
							if c.Content != nil {
								check(name+" card content", c.Content.Text)
							}
						}
					case name == "replayed" && u.SessionUpdate == acp.UpdateAgentMessageChunk && u.Content != nil && strings.Contains(u.Content.Text, "[") && u.Content.Text != "ok":
						check("replayed give-up line", u.Content.Text)
					}
				}
			}
		})
	}
}
