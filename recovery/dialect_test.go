package recovery_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/internal/golden"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// Every dialect entry is exercised by a recorded wire shape: an entry no
// case of testdata/providers produces is a guess.
func TestDialects_EachHasAFixture(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "providers", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	// Entries that differ from a tested one only by where the same
	// structured code sits; the unit tests of Classify pin those.
	spelling := map[string]bool{"openai.context_length_exceeded_type": true, "openai.insufficient_quota_type": true, "anthropic.overloaded_error_code": true}
	for _, d := range recovery.Dialects {
		if !spelling[d.ID] && !strings.Contains(all.String(), `"dialect": "`+d.ID+`"`) {
			t.Errorf("dialect %s has no case in testdata/providers", d.ID)
		}
	}
}

// A user's rule is asked before any policy, so it overrides what the
// dialect table made of a failure: here a rule retries xAI's out-of-credits
// 429 (QUOTA by the table), and another reports DeepSeek's overflow at
// once instead of compacting.
func TestDialects_UserRulesComeFirst(t *testing.T) {
	credits := &llm.Error{Status: 429, Code: "Some resource has been exhausted", Message: "Your team t has either used all available credits or reached its monthly spending limit."}
	overflow := &llm.Error{Status: 400, Type: "invalid_request_error", Message: "This model's maximum context length is 65536 tokens."}
	if c := recovery.Classify(credits).Code; c != recovery.Quota {
		t.Fatalf("credits: %s, want QUOTA", c)
	}
	tests := []struct {
		name     string
		err      error
		rule     recovery.Rule
		attempts int
		why      string
	}{
		{"a 429 rule retries out of credits", credits, recovery.Rule{Match: "429", Delay: time.Second, MaxRetries: 2}, 3, "rule 1 (429) allows no more retries"},
		{"a msg~ rule reports an overflow at once", overflow, recovery.Rule{Match: "msg~maximum context length", MaxRetries: 0}, 1, "rule 1 (msg~maximum context length) reports it at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				exec := recovery.Executor{Config: recovery.Config{Policy: recovery.DefaultPolicy(), Rules: []recovery.Rule{tt.rule}, Overflow: true}, Start: time.Now()}
				attempts := 0
				err := exec.Do(t.Context(), recovery.Chain{}, adapting{newObserver(t)}, func(context.Context) error {
					attempts++
					return tt.err
				})
				g, ok := recovery.AsGiveUp(err)
				if !ok || attempts != tt.attempts || g.Why != tt.why {
					t.Errorf("Do() = %v after %d attempts; want the give-up %q after %d", err, attempts, tt.why, tt.attempts)
				}
			})
		})
	}
}

// adapting is an observer that can change the request, so the overflow
// policy would compact if no rule came first.
type adapting struct{ *observer }

func (adapting) Adapt(context.Context, recovery.Retry) error {
	return errors.New("compaction was not expected")
}

// docs/providers.md lists the dialect table and the sources of a wait as
// the code has them.
func TestDialects_Documented(t *testing.T) {
	const begin, end = "<!-- dialects:begin (go test ./recovery -run Documented -update) -->\n", "<!-- dialects:end -->"
	var b strings.Builder
	b.WriteString("| dialect | provider | matches | means |\n|---|---|---|---|\n")
	for _, d := range recovery.Dialects {
		means := string(d.Means)
		if d.ContentFilter {
			means += ", content filter (stopReason `refusal`)"
		}
		b.WriteString("| `" + d.ID + "` | " + d.Provider + " | " + d.Shape() + " | " + means + " |\n")
	}
	b.WriteString("\nA provider's wait, first found wins (`retryAfterSource`): ")
	for k, src := range recovery.HintSources() {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + src + "`")
	}
	b.WriteString(".\n")
	golden.CompareSection(t, filepath.Join("..", "docs", "providers.md"), begin, end, b.String(), *golden.Update, "go test ./recovery -run Documented -update")
}
