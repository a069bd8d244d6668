package agent

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// Property: a failed turn replays its give-up as one bracketed line of
// inert text, bounded, whatever the provider's error said: its message,
// which the live error quoted, may hold newlines (in codecompanion a
// "## Me" line of it drew a prompt the user never sent), a terminal's
// escape sequences and kilobytes of text. Found by driving the binary: a
// 400 whose message began "]\n\n**Me:** …" replayed as 5,152 characters
// over six lines.
func TestReplay_GiveUpIsOneInertLine(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 8))
	pieces := []string{"\n", "\r\n", "\n\n## Me\n", "]", "**Me:**", "\x1b[31m", "\x00", "\u202e", "\t", "word ", strings.Repeat("A", 700), "é"}
	for i := range 40 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		msg := b.String()
		dir := t.TempDir()
		fail := func(context.Context, llm.Request) (llm.Stream, error) {
			return nil, &llm.Error{Status: 400, Type: "invalid_request_error", Message: msg}
		}
		a := testAgent(t, Config{StateDir: dir, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){fail}}})
		id := newSession(t, a)
		if _, err := prompt1(t.Context(), a, id, "hi", &editor{}); err == nil {
			t.Fatal("the prompt did not fail")
		}
		a.Close()
		b2 := testAgent(t, Config{StateDir: dir})
		loaded := &editor{}
		if _, err := b2.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: dir}, loaded); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, u := range loaded.updates {
			if u.SessionUpdate == acp.UpdateAgentMessageChunk && u.Content != nil && strings.Contains(u.Content.Text, "[") {
				lines = append(lines, u.Content.Text)
			}
		}
		if len(lines) != 1 {
			t.Fatalf("case %d: message %q: replayed text %q, want one give-up line", i, msg, lines)
		}
		line := strings.TrimLeft(lines[0], "\n")
		if !strings.HasPrefix(line, "[") || !strings.HasSuffix(line, "]") || strings.ContainsFunc(line, func(c rune) bool {
			return unicode.IsControl(c) || unicode.Is(unicode.Cf, c)
		}) {
			t.Fatalf("case %d: message %q replayed as %q: not one inert bracketed line", i, msg, line)
		}
		if n := utf8.RuneCountInString(line); n > maxGiveUpLine+2 {
			t.Fatalf("case %d: the give-up line has %d characters", i, n)
		}
	}
}
