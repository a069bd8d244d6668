package recovery_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// A user's rule matches what the stream made of a finish reason and of an
// in-stream error frame: the word (finish_reason=…) and the status the
// frame carried (429), as it would an HTTP error's.
func TestStreamFailures_UserRules(t *testing.T) {
	const networkError = `data: {"choices":[{"index":0,"delta":{"content":"half"},"finish_reason":"network_error"}]}` + "\n\n"
	const frame429 = `data: {"code":"429","message":"slow down"}` + "\n\n"
	tests := []struct {
		name, body string
		rule       recovery.Rule
		attempts   int
		code       recovery.Code
		status     int
	}{
		{"no rule: a failed finish is retried", networkError, recovery.Rule{}, 3, recovery.Server, 0},
		{"finish_reason=network_error reports it at once", networkError, recovery.Rule{Match: "finish_reason=network_error"}, 1, recovery.Server, 0},
		{"msg~network_error reports it at once", networkError, recovery.Rule{Match: "msg~network_error"}, 1, recovery.Server, 0},
		{"no rule: a 429 frame is a rate limit", frame429, recovery.Rule{}, 3, recovery.RateLimit, 429},
		{"a 429 rule matches the frame's status", frame429, recovery.Rule{Match: "429", Delay: time.Second, MaxRetries: 1}, 2, recovery.RateLimit, 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := providerCase{status: 200, header: http.Header{}, body: tt.body}
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://provider.invalid/v1", APIKey: "sk-test-rules", HTTPClient: replayDoer{&c}})
				cfg := recovery.Config{Policy: recovery.DefaultPolicy()}
				if tt.rule.Match != "" {
					cfg.Rules = []recovery.Rule{tt.rule}
				}
				exec := recovery.Executor{Config: cfg, Start: time.Now()}
				err := exec.Do(context.Background(), recovery.Chain{}, newObserver(t), failingAttempt(t, p))
				g, ok := recovery.AsGiveUp(err)
				if !ok || c.replays != tt.attempts || g.Failure.Code != tt.code || g.Failure.Status != tt.status {
					t.Fatalf("Do() = %v after %d requests; want a give-up (%s, status %d) after %d", err, c.replays, tt.code, tt.status, tt.attempts)
				}
			})
		})
	}
}

// failingAttempt is an attempt that streams a reply from p to its end,
// which must be an error.
func failingAttempt(t *testing.T, p llm.Provider) func(context.Context) error {
	return func(ctx context.Context) error {
		s, err := p.Stream(ctx, hello)
		if err != nil {
			return err
		}
		defer s.Close()
		for {
			if _, err := s.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					t.Fatal("the attempt finished without an error")
				}
				return err
			}
		}
	}
}
