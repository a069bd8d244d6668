package recovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
)

func ptr[T any](v T) *T { return &v }

var hello = llm.Request{
	Model:    "mock-model",
	Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "Hi"}},
}

// newProvider returns the real OpenAI adapter over an in-memory mock that
// plays steps. Usable inside a synctest bubble.
func newProvider(t *testing.T, script *mockprovider.Script) (*llm.OpenAI, *mockprovider.Mock) {
	t.Helper()
	if err := script.Validate(); err != nil {
		t.Fatal(err)
	}
	m := mockprovider.New(script)
	return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: "sk-test-key", HTTPClient: m}), m
}

// fixture reads a file under testdata/.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bodyFixture returns a fixture as a mock step body: JSON files as JSON,
// anything else (an HTML page, plain text) as a JSON string, which the mock
// sends as raw text.
func bodyFixture(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b := fixture(t, name)
	if filepath.Ext(name) == ".json" {
		return b
	}
	s, err := json.Marshal(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// attemptError runs one attempt through the real adapter against the mock
// and returns the error it ended with: from Stream (an HTTP error) or from
// Recv (an in-stream error, a dropped stream). A reply that finishes fails
// the test.
func attemptError(t *testing.T, p llm.Provider) error {
	t.Helper()
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		return err
	}
	defer s.Close()
	for range 1000 {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatal("the attempt finished without an error")
			}
			return err
		}
	}
	t.Fatal("stream never ended")
	return nil
}

// drain reads a stream to its end, returning the content and the final
// error (io.EOF when it finished properly).
func drain(t *testing.T, s llm.Stream) (string, error) {
	t.Helper()
	var r llm.Reply
	for range 1000 {
		c, err := s.Recv()
		if err != nil {
			return r.Content, err
		}
		r.Add(c)
	}
	t.Fatal("stream never ended")
	return "", nil
}

// call is one Observer call as the fake observer saw it.
type call struct {
	Kind  string // Scheduled, Started, Cancelled
	At    time.Duration
	ID    string // a fresh chain id is recorded as "<new>"
	N     int
	Max   int
	Delay time.Duration
	Code  recovery.Code
}

var retryIDPattern = regexp.MustCompile(`^retry_[0-9a-f]{16}$`)

// observer is a fake recovery.Observer that records its calls with the
// fake-clock time since start.
type observer struct {
	t            *testing.T
	start        time.Time
	scheduledErr error
	startedErr   error

	mu    sync.Mutex
	calls []call
	newID string // the generated chain id, once seen
}

func newObserver(t *testing.T) *observer { return &observer{t: t, start: time.Now()} }

func (o *observer) record(kind string, r recovery.Retry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	id := r.ID
	if retryIDPattern.MatchString(id) {
		if o.newID == "" {
			o.newID = id
		}
		if id != o.newID {
			o.t.Errorf("%s: retry id %q, want the chain's id %q", kind, id, o.newID)
		}
		id = "<new>"
	}
	c := call{Kind: kind, At: time.Since(o.start), ID: id, N: r.N, Max: r.Max, Delay: r.Delay}
	if r.Failure != nil {
		c.Code = r.Failure.Code
	}
	o.calls = append(o.calls, c)
}

func (o *observer) Scheduled(ctx context.Context, r recovery.Retry) error {
	o.record("Scheduled", r)
	return o.scheduledErr
}

func (o *observer) Started(ctx context.Context, r recovery.Retry) error {
	o.record("Started", r)
	return o.startedErr
}

func (o *observer) Cancelled(r recovery.Retry) { o.record("Cancelled", r) }

func (o *observer) Calls() []call {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]call(nil), o.calls...)
}

// scripted is an attempt func that returns errs in order (nil once they
// are used up) and records when each attempt started. Like a real request,
// an attempt whose context is already done fails at once with its cause and
// consumes nothing.
type scripted struct {
	start time.Time
	errs  []error
	at    []time.Duration
	last  error // what the last attempt returned
}

func newScripted(errs ...error) *scripted { return &scripted{start: time.Now(), errs: errs} }

func (s *scripted) attempt(ctx context.Context) error {
	s.at = append(s.at, time.Since(s.start))
	if ctx.Err() != nil {
		s.last = context.Cause(ctx)
		return s.last
	}
	s.last = nil
	if len(s.errs) > 0 {
		s.last, s.errs = s.errs[0], s.errs[1:]
	}
	return s.last
}

// fakeProvider hands out one fakeStream and records the context the attempt
// ran under, so tests can check that a watchdog aborted the request itself.
type fakeProvider struct {
	items     []fakeItem
	streamErr error

	ctx context.Context
}

// fakeItem is one Recv result, after a wait since the previous one.
type fakeItem struct {
	after time.Duration
	chunk llm.Chunk
	err   error
}

func (p *fakeProvider) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	p.ctx = ctx
	if p.streamErr != nil {
		return nil, p.streamErr
	}
	return &fakeStream{ctx: ctx, items: p.items}, nil
}

// fakeStream plays items, then blocks until its context ends, as a stalled
// HTTP body does.
type fakeStream struct {
	ctx   context.Context
	items []fakeItem
}

func (s *fakeStream) Recv() (llm.Chunk, error) {
	if len(s.items) == 0 {
		<-s.ctx.Done()
		return llm.Chunk{}, fmt.Errorf("fake read: %w", context.Cause(s.ctx))
	}
	it := s.items[0]
	s.items = s.items[1:]
	tm := time.NewTimer(it.after)
	defer tm.Stop()
	select {
	case <-s.ctx.Done():
		return llm.Chunk{}, fmt.Errorf("fake read: %w", context.Cause(s.ctx))
	case <-tm.C:
		return it.chunk, it.err
	}
}

func (s *fakeStream) Close() error { return nil }
