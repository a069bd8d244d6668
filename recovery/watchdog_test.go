package recovery_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
)

// received is one Recv result as a watchdog test sees it.
type received struct {
	At      time.Duration
	Content string
}

// recvAll reads s until an error, recording when each chunk with content
// arrived. synctest.Test fails if anything is left running at the end: the
// mock's body writer stops only when the request's context ends, so a clean
// finish also proves the request was aborted, not just abandoned.
func recvAll(t *testing.T, start time.Time, s llm.Stream) ([]received, time.Duration, error) {
	t.Helper()
	var got []received
	for range 1000 {
		c, err := s.Recv()
		if err != nil {
			return got, time.Since(start), err
		}
		if c.Content != "" {
			got = append(got, received{At: time.Since(start), Content: c.Content})
		}
	}
	t.Fatal("stream never ended")
	return nil, 0, nil
}

func TestWatch_FiresThroughProvider(t *testing.T) {
	tests := []struct {
		name      string
		step      mockprovider.Step
		timeouts  recovery.Timeouts
		wantWatch bool // the error comes from Watch itself (no headers yet)
		want      []received
		wantAt    time.Duration
		wantErr   error
		wantMsg   string
	}{
		{
			name:     "first token: headers, then nothing",
			step:     mockprovider.Step{Text: "never", StallAfter: ptr(0)},
			timeouts: recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second},
			wantAt:   90 * time.Second, wantErr: recovery.ErrFirstTokenTimeout,
			wantMsg: "no output from the provider within first_token_timeout (1m30s)",
		},
		{
			name:      "first token: not even headers",
			step:      mockprovider.Step{Text: "late", Delay: "10m"},
			timeouts:  recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second},
			wantWatch: true,
			wantAt:    90 * time.Second, wantErr: recovery.ErrFirstTokenTimeout,
			wantMsg: "no output from the provider within first_token_timeout (1m30s)",
		},
		{
			name:     "idle: two chunks, then a stall",
			step:     mockprovider.Step{Text: "abcd", Chunks: 4, ChunkDelay: "2s", StallAfter: ptr(2)},
			timeouts: recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second},
			want:     []received{{0, "a"}, {2 * time.Second, "b"}},
			wantAt:   7 * time.Second, wantErr: recovery.ErrIdleTimeout,
			wantMsg: "the provider's stream went quiet for longer than stream_idle_timeout (5s)",
		},
		{
			name:     "idle: only the idle watchdog is set",
			step:     mockprovider.Step{Text: "abc", Chunks: 3, StallAfter: ptr(1)},
			timeouts: recovery.Timeouts{Idle: 5 * time.Second},
			want:     []received{{0, "a"}},
			wantAt:   5 * time.Second, wantErr: recovery.ErrIdleTimeout,
			wantMsg: "the provider's stream went quiet for longer than stream_idle_timeout (5s)",
		},
		{
			name:     "chunks more often than the idle timeout never fire it",
			step:     mockprovider.Step{Text: "0123456789", Chunks: 10, ChunkDelay: "4s"},
			timeouts: recovery.Timeouts{FirstToken: 5 * time.Second, Idle: 5 * time.Second},
			want: []received{{0, "0"}, {4 * time.Second, "1"}, {8 * time.Second, "2"}, {12 * time.Second, "3"}, {16 * time.Second, "4"},
				{20 * time.Second, "5"}, {24 * time.Second, "6"}, {28 * time.Second, "7"}, {32 * time.Second, "8"}, {36 * time.Second, "9"}},
			wantAt: 40 * time.Second, wantErr: io.EOF, // the finish chunk comes 4s after the last delta
		},
		{
			name:     "a slow but steady first token",
			step:     mockprovider.Step{Text: "hi", Delay: "89s"},
			timeouts: recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second},
			want:     []received{{89 * time.Second, "hi"}},
			wantAt:   89 * time.Second, wantErr: io.EOF,
		},
		{
			name:     "no watchdogs: a finished reply",
			step:     mockprovider.Step{Text: "hello", Chunks: 2, ChunkDelay: "1h"},
			timeouts: recovery.Timeouts{},
			want:     []received{{0, "he"}, {time.Hour, "llo"}},
			wantAt:   2 * time.Hour, wantErr: io.EOF,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, m := newProvider(t, &mockprovider.Script{Steps: []mockprovider.Step{tt.step}})
				start := time.Now()
				s, err := recovery.Watch(t.Context(), p, hello, tt.timeouts)
				var got []received
				at := time.Since(start)
				if err == nil {
					if tt.wantWatch {
						t.Fatal("Watch() succeeded, want it to fail")
					}
					got, at, err = recvAll(t, start, s)
					s.Close()
				} else if !tt.wantWatch {
					t.Fatalf("Watch() = %v", err)
				}

				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("chunks (-want +got):\n%s", diff)
				}
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error = %v, want one wrapping %v", err, tt.wantErr)
				}
				if at != tt.wantAt {
					t.Errorf("ended after %v, want %v", at, tt.wantAt)
				}
				if tt.wantMsg != "" {
					want := &recovery.Failure{Code: recovery.Timeout, Message: tt.wantMsg, Limit: map[error]string{
						recovery.ErrFirstTokenTimeout: recovery.LimitFirstToken, recovery.ErrIdleTimeout: recovery.LimitIdle}[tt.wantErr]}
					if diff := cmp.Diff(want, recovery.Classify(err), ignoreUnexported); diff != "" {
						t.Errorf("Classify() (-want +got):\n%s", diff)
					}
				}
				if n := m.Count(); n != 1 {
					t.Errorf("requests = %d, want 1", n)
				}
			})
		})
	}
}

// Only model output (content, reasoning, a tool call) re-arms the
// watchdogs; role-only and usage-only chunks do not. The request's own
// context is cancelled with the watchdog's error before anyone calls Close.
func TestWatch_OnlyOutputRearms(t *testing.T) {
	usage := &llm.Usage{PromptTokens: 10, CompletionTokens: 2}
	tests := []struct {
		name     string
		items    []fakeItem
		timeouts recovery.Timeouts
		wantAt   time.Duration
		wantErr  error
	}{
		{
			name:     "role-only and usage chunks before any output",
			items:    []fakeItem{{after: 40 * time.Second}, {after: 40 * time.Second, chunk: llm.Chunk{Usage: usage}}},
			timeouts: recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second},
			wantAt:   90 * time.Second, wantErr: recovery.ErrFirstTokenTimeout,
		},
		{
			name: "role-only and usage chunks after output",
			items: []fakeItem{
				{chunk: llm.Chunk{Content: "a"}},
				{after: 2 * time.Second},
				{after: 2 * time.Second, chunk: llm.Chunk{Usage: usage}},
			},
			timeouts: recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second},
			wantAt:   5 * time.Second, wantErr: recovery.ErrIdleTimeout,
		},
		{
			name: "reasoning and tool-call deltas count as output",
			items: []fakeItem{
				{after: 80 * time.Second, chunk: llm.Chunk{Reasoning: "hm"}},
				{after: 4 * time.Second, chunk: llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "c1", Name: "read"}}}},
				{after: 4 * time.Second, chunk: llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, Arguments: "{}"}}}},
			},
			timeouts: recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second},
			wantAt:   93 * time.Second, wantErr: recovery.ErrIdleTimeout,
		},
		{
			// Each delta comes before the idle limit of the one before, and
			// the timer only notes them: the limit runs from the last.
			name:     "the idle limit runs from the last of a steady stream",
			items:    steady(8, 2500*time.Millisecond),
			timeouts: recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 3 * time.Second},
			wantAt:   23 * time.Second, wantErr: recovery.ErrIdleTimeout,
		},
		{
			name:     "a first-token limit shorter than the idle one",
			items:    steady(3, time.Second),
			timeouts: recovery.Timeouts{FirstToken: 2 * time.Second, Idle: 10 * time.Second},
			wantAt:   13 * time.Second, wantErr: recovery.ErrIdleTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fp := &fakeProvider{items: tt.items}
				start := time.Now()
				s, err := recovery.Watch(t.Context(), fp, hello, tt.timeouts)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				_, at, err := recvAll(t, start, s)
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Recv() = %v, want one wrapping %v", err, tt.wantErr)
				}
				if at != tt.wantAt {
					t.Errorf("Recv() failed after %v, want %v", at, tt.wantAt)
				}
				// The request itself was aborted, with the watchdog's reason.
				if cause := context.Cause(fp.ctx); !errors.Is(cause, tt.wantErr) {
					t.Errorf("request context cause = %v, want one wrapping %v", cause, tt.wantErr)
				}
			})
		})
	}
}

// steady is n content deltas, each every after.
func steady(n int, every time.Duration) []fakeItem {
	items := make([]fakeItem, n)
	for i := range items {
		items[i] = fakeItem{after: every, chunk: llm.Chunk{Content: "x"}}
	}
	return items
}

// Close stops the watchdogs and aborts the request: nothing fires later and
// nothing is left running (synctest.Test would report it).
func TestWatch_CloseStopsTimers(t *testing.T) {
	tests := []struct {
		name  string
		step  mockprovider.Step
		reads int
	}{
		{"before any output", mockprovider.Step{Text: "ab", StallAfter: ptr(0)}, 0},
		{"after some output", mockprovider.Step{Text: "ab", Chunks: 2, StallAfter: ptr(1)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, _ := newProvider(t, &mockprovider.Script{Steps: []mockprovider.Step{tt.step}})
				s, err := recovery.Watch(t.Context(), p, hello, recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				for range tt.reads {
					if _, err := s.Recv(); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					t.Errorf("Close() = %v", err)
				}
				time.Sleep(time.Hour) // long past both watchdogs
				synctest.Wait()
				_, err = s.Recv()
				if !errors.Is(err, llm.ErrStreamClosed) {
					t.Errorf("Recv() after Close = %v, want one wrapping llm.ErrStreamClosed", err)
				}
				if errors.Is(err, recovery.ErrFirstTokenTimeout) || errors.Is(err, recovery.ErrIdleTimeout) {
					t.Errorf("Recv() after Close = %v: a watchdog fired after Close", err)
				}
			})
		})
	}
}

// Close from another goroutine wakes a Recv blocked on a stalled stream.
func TestWatch_CloseWakesRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newProvider(t, &mockprovider.Script{Steps: []mockprovider.Step{{Text: "ab", StallAfter: ptr(0)}}})
		s, err := recovery.Watch(t.Context(), p, hello, recovery.Timeouts{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := s.Recv()
			done <- err
		}()
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Recv() returned %v without watchdogs or Close", err)
		default:
		}
		s.Close()
		if err := <-done; !errors.Is(err, llm.ErrStreamClosed) {
			t.Errorf("Recv() = %v, want one wrapping llm.ErrStreamClosed", err)
		}
		if got := time.Since(start); got != 24*time.Hour {
			t.Errorf("Recv() returned after %v, want 24h (at once on Close)", got)
		}
	})
}

// A provider error from Stream passes through unchanged, and the attempt's
// context is released at once.
func TestWatch_StreamError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		perr := &llm.Error{Status: 429, Code: "rate_limit_exceeded", Message: "slow down"}
		fp := &fakeProvider{streamErr: perr}
		s, err := recovery.Watch(t.Context(), fp, hello, recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second})
		if s != nil || err != perr {
			t.Fatalf("Watch() = %v, %v; want nil, the provider's error", s, err)
		}
		if fp.ctx.Err() == nil {
			t.Error("the attempt's context is still live after Watch failed")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if cause := context.Cause(fp.ctx); errors.Is(cause, recovery.ErrFirstTokenTimeout) {
			t.Errorf("request context cause = %v: the first-token watchdog fired after Watch failed", cause)
		}
	})
}

// A watchdog that fires after the reply's finish chunk (usage or [DONE]
// are late) does not throw the complete reply away.
func TestWatch_FiresAfterFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp := &fakeProvider{items: []fakeItem{
			{chunk: llm.Chunk{Content: "Hello"}},
			{after: time.Second, chunk: llm.Chunk{FinishReason: llm.FinishStop}},
		}}
		start := time.Now()
		s, err := recovery.Watch(t.Context(), fp, hello, recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var r llm.Reply
		for {
			c, err := s.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("Recv() = %v, want io.EOF: the reply had finished", err)
				}
				break
			}
			r.Add(c)
		}
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("stream ended after %v, want 5s (the idle watchdog)", got)
		}
		if diff := cmp.Diff(llm.Reply{Content: "Hello", FinishReason: llm.FinishStop, Deltas: 1}, r, cmpopts.IgnoreUnexported(llm.Reply{})); diff != "" {
			t.Errorf("reply (-want +got):\n%s", diff)
		}
		if cause := context.Cause(fp.ctx); !errors.Is(cause, recovery.ErrIdleTimeout) {
			t.Errorf("request context cause = %v, want the idle watchdog's error", cause)
		}
	})
}
