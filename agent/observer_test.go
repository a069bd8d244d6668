package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// fakeObserver is an observer whose recorder and sender write to one list,
// so a test reads what was recorded and sent, in order.
type fakeObserver struct {
	*observer
	log       []string // "record <type> [sync]" and "send <kind> <phase|title>"
	recordErr error
	adapted   []recovery.Action
}

func newFakeObserver(notices, calls bool) *fakeObserver {
	f := &fakeObserver{}
	nop := zerolog.Nop()
	f.observer = newObserver(observer{turn: 2, sessionID: "sess_1",
		record: func(typ string, data any, sync bool) error {
			line := "record " + typ
			if st, ok := data.(session.Status); ok {
				line += " " + st.State
			}
			if sync {
				line += " sync"
			}
			f.log = append(f.log, line)
			return f.recordErr
		},
		send: func(_ context.Context, u acp.SessionUpdate) {
			f.log = append(f.log, "send "+describe(u))
		},
		facts:   func() requestFacts { return requestFacts{step: 4, model: "m1", maxTokens: 100} },
		adapt:   func(_ context.Context, r recovery.Retry) error { f.adapted = append(f.adapted, r.Action); return nil },
		notices: notices, apiKeyEnv: "KEY", log: &nop,
	}, calls)
	return f
}

// describe names an update by its kind and what tells it apart.
func describe(u acp.SessionUpdate) string {
	if p, ok := u.Meta[RetryMetaKey].(recovery.RetryProgress); ok {
		if u.SessionUpdate == "session_info_update" {
			return fmt.Sprintf("progress %s %d/%d", p.Phase, p.Retry, p.MaxRetries)
		}
		return u.SessionUpdate + " retry"
	}
	if _, ok := u.Meta[RefusalMetaKey]; ok {
		return u.SessionUpdate + " refusal"
	}
	if u.Status != "" {
		return "card " + u.Status
	}
	return u.SessionUpdate
}

func (f *fakeObserver) want(t *testing.T, want ...string) {
	t.Helper()
	if got := strings.Join(f.log, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	f.log = nil
}

// TestObserver_RecordThenSend: a retry is recorded (synced, before its
// wait) before anything is sent of it; each carrier gets it as wait_status
// says; the chain carries on from the retries it saw, and its give-up says
// the last policy's budget.
func TestObserver_RecordThenSend(t *testing.T) {
	ctx := t.Context()
	r := recovery.Retry{ID: "r1", N: 1, Max: 3, Policy: "transient", PolicyN: 1, Delay: time.Second,
		Failure: &recovery.Failure{Code: recovery.Server, Status: 503}}
	for _, tt := range []struct {
		name           string
		notices, calls bool
		scheduled      []string
	}{
		{"notices", true, false, []string{"record llm/retry sync", "send progress scheduled 1/3", "record status in_progress", "send notice retry"}},
		{"tool calls", false, true, []string{"record llm/retry sync", "send progress scheduled 1/3", "record status in_progress", "send card in_progress"}},
		{"meta only", false, false, []string{"record llm/retry sync", "send progress scheduled 1/3", "record status in_progress"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeObserver(tt.notices, tt.calls)
			if err := f.Scheduled(ctx, r); err != nil {
				t.Fatal(err)
			}
			f.want(t, tt.scheduled...)
			if err := f.Started(ctx, r); err != nil {
				t.Fatal(err)
			}
			started := []string{"record llm/retry-started", "send progress started 1/3", "record status in_progress"}
			if tt.calls {
				started = append(started, "send card in_progress")
			}
			f.want(t, started...)
			if f.chain.ID != "r1" || f.chain.Retries != 1 || f.chain.Used["transient"] != 1 {
				t.Errorf("chain %+v after retry 1 of r1", f.chain)
			}
			f.exhausted(ctx, r.Failure)
			f.want(t, "send progress exhausted 1/3")
		})
	}
	t.Run("a record that fails sends nothing", func(t *testing.T) {
		f := newFakeObserver(true, true)
		f.recordErr = errors.New("disk full")
		if err := f.Scheduled(ctx, r); !errors.Is(err, f.recordErr) {
			t.Fatalf("Scheduled: %v", err)
		}
		if err := f.Started(ctx, r); !errors.Is(err, f.recordErr) {
			t.Fatalf("Started: %v", err)
		}
		f.want(t, "record llm/retry sync", "record llm/retry-started")
	})
	t.Run("a cancelled wait still says so", func(t *testing.T) {
		f := newFakeObserver(false, true)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		var sent context.Context
		f.send = func(ctx context.Context, u acp.SessionUpdate) { sent = ctx }
		f.Cancelled(r)
		if sent == nil || sent.Err() != nil || cctx.Err() == nil {
			t.Errorf("Cancelled sent with %v", sent)
		}
	})
}

// TestObserver_OwnRetry: a retry the agent decides itself opens a chain
// when there is none and goes on with the one there is, recorded and
// shown as the executor's are, with no wait.
func TestObserver_OwnRetry(t *testing.T) {
	ctx := t.Context()
	f := newFakeObserver(false, false)
	if err := f.ownRetry(ctx, "truncation", recovery.ActionEscalate, 1, 2); err != nil {
		t.Fatal(err)
	}
	id := f.chain.ID
	if id == "" || f.chain.Retries != 1 {
		t.Fatalf("chain %+v", f.chain)
	}
	f.chain.Retries = 3 // the executor's retries in the same chain
	if err := f.ownRetry(ctx, "truncation", recovery.ActionContinue, 2, 2); err != nil {
		t.Fatal(err)
	}
	if f.chain.ID != id || f.chain.Retries != 4 || f.chain.Used["truncation"] != 2 {
		t.Errorf("chain %+v, want %s with 4 retries", f.chain, id)
	}
	f.recordErr = errors.New("disk full")
	if err := f.ownRetry(ctx, "truncation", recovery.ActionContinue, 3, 3); !errors.Is(err, f.recordErr) {
		t.Errorf("ownRetry: %v", err)
	}
	if err := f.Adapt(ctx, recovery.Retry{Action: recovery.ActionCompact}); err != nil || len(f.adapted) != 1 {
		t.Errorf("Adapt: %v, adapted %v", err, f.adapted)
	}
}

// TestObserver_Shown: a refusal, an MCP server gone and a /retry wait
// reach every carrier wait_status names, recorded first.
func TestObserver_Shown(t *testing.T) {
	ctx := t.Context()
	refusal := &recovery.Failure{Code: recovery.InvalidRequest, ContentFilter: true, Message: "flagged"}
	gone := []mcp.Failure{{Server: "a", Err: errors.New("exit 1")}, {Server: "b", Err: errors.New("exit 2")}}
	f := newFakeObserver(true, true)
	f.refused(ctx, refusal)
	f.want(t, "send notice refusal", "record status failed", "send card failed")
	f.reportMCP(ctx, gone)
	f.want(t, "record status failed", "send card failed", "send notice", "record status failed", "send card failed", "send notice")
	f = newFakeObserver(false, false)
	f.refused(ctx, refusal)
	f.reportMCP(ctx, gone)
	f.want(t, "record status failed", "record status failed", "record status failed")
}

// TestObserver_WaitNamed: /retry wait's wait continues the chain it is
// given, recorded before it waits, and ends Started when the time comes
// or Cancelled when the prompt is cancelled, in fake time.
func TestObserver_WaitNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeObserver(false, false)
		w := &retryWait{until: time.Now().Add(time.Minute)}
		start := time.Now()
		if err := f.waitNamed(t.Context(), recovery.Chain{ID: "r9", Retries: 2, Used: map[string]int{"transient": 2}}, w); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Errorf("waited %v", waited)
		}
		f.want(t, "record llm/retry sync", "send progress scheduled 3/1", "record status in_progress",
			"record llm/retry-started", "send progress started 3/1", "record status in_progress")
		if f.chain.ID != "r9" || f.chain.Retries != 3 || f.chain.Used["transient"] != 2 || f.chain.Used[policyWait] != 1 {
			t.Errorf("chain %+v", f.chain)
		}

		ctx, cancel := context.WithCancel(t.Context())
		w = &retryWait{until: time.Now().Add(time.Minute)}
		go func() { time.Sleep(time.Second); cancel() }()
		if err := f.waitNamed(ctx, recovery.Chain{}, w); !errors.Is(err, context.Canceled) {
			t.Fatalf("waitNamed: %v", err)
		}
		f.want(t, "record llm/retry sync", "send progress scheduled 1/1", "record status in_progress", "send progress cancelled 1/1")

		w = &retryWait{until: time.Now()} // nothing to wait
		if err := f.waitNamed(t.Context(), recovery.Chain{}, w); err != nil || len(f.log) != 0 {
			t.Errorf("a past time: %v, %q", err, f.log)
		}
	})
}
