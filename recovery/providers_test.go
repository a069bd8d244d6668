package recovery_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// providerCase is one recorded wire shape of testdata/providers: what the
// provider sends (status, headers, body or event stream) and what a user
// must see of it.
type providerCase struct {
	source  string // the comment: where the bytes were re-created from
	status  int
	header  http.Header
	body    string
	want    caseWant
	replays int // requests served
	// modelMissing: the case is a model the provider does not have (its
	// file is named *model_not_found*), which Failure.ModelNotFound says.
	modelMissing bool
}

type caseWant struct {
	// A failure: its facts, how many requests the default policy makes of
	// it, and what the give-up message says (substrings).
	Code             recovery.Code `json:"code"`
	Status           int           `json:"status"`
	Dialect          string        `json:"dialect"`
	RecognisedBy     string        `json:"recognisedBy"`
	ContentFilter    bool          `json:"contentFilter"`
	RetryAfterMs     *int64        `json:"retryAfterMs"`
	RetryAfterSource string        `json:"retryAfterSource"`
	Attempts         int           `json:"attempts"`
	GiveUp           []string      `json:"giveUp"`
	// A reply.
	Text      string         `json:"text"`
	Thoughts  string         `json:"thoughts"`
	ToolCalls []llm.ToolCall `json:"toolCalls"`
	Finish    string         `json:"finish"`
	// FinishClass, when given, is the class of Finish (llm.ClassifyFinish):
	// what the agent makes of the provider's word.
	FinishClass string `json:"finishClass"`
}

func loadCase(t *testing.T, path string) providerCase {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := providerCase{source: strings.TrimSpace(string(ar.Comment)), header: http.Header{},
		modelMissing: strings.Contains(filepath.Base(path), "model_not_found")}
	if !strings.HasPrefix(c.source, "Source:") {
		t.Fatalf("%s: the comment must start with Source: naming where the bytes come from", path)
	}
	for _, f := range ar.Files {
		data := string(f.Data)
		switch f.Name {
		case "status":
			if c.status, err = strconv.Atoi(strings.TrimSpace(data)); err != nil {
				t.Fatalf("%s: status: %v", path, err)
			}
		case "headers":
			sc := bufio.NewScanner(strings.NewReader(data))
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
					c.header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
				}
			}
		case "body":
			c.body = data
		case "want":
			dec := json.NewDecoder(strings.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c.want); err != nil {
				t.Fatalf("%s: want: %v", path, err)
			}
		default:
			t.Fatalf("%s: unknown section %q", path, f.Name)
		}
	}
	if c.status == 0 {
		t.Fatalf("%s: no status", path)
	}
	return c
}

// replayDoer serves the case's bytes to every request, as the provider
// would answer each retry of the same request.
type replayDoer struct {
	c *providerCase
}

func (d replayDoer) Do(req *http.Request) (*http.Response, error) {
	d.c.replays++
	h := d.c.header.Clone()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
		if d.c.status < 300 {
			h.Set("Content-Type", "text/event-stream")
		}
	}
	return &http.Response{StatusCode: d.c.status, Header: h, Body: io.NopCloser(strings.NewReader(d.c.body)), Request: req}, nil
}

// Every case of testdata/providers replayed through the real adapter
// (go-openai over an HTTPDoer) and the real executor with the default
// policy, on a fake clock: a reply must come out as the provider meant it,
// a failure with the facts, the waits and the message a user must see.
func TestProviders_Corpus(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "providers", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 40 {
		t.Errorf("%d cases, want at least 40", len(paths))
	}
	providers := map[string]bool{}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		providers[strings.SplitN(name, "_", 2)[0]] = true
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, path)
			synctest.Test(t, func(t *testing.T) {
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://provider.invalid/v1", APIKey: "sk-test-corpus", HTTPClient: replayDoer{&c}})
				if c.want.Code != "" {
					checkFailure(t, &c, p)
				} else {
					checkReply(t, &c, p)
				}
			})
		})
	}
	if len(providers) < 12 {
		t.Errorf("%d providers (%v), want at least 12", len(providers), providers)
	}
}

func checkReply(t *testing.T, c *providerCase, p llm.Provider) {
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatalf("Stream() = %v", err)
	}
	defer s.Close()
	var r llm.Reply
	for {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv() = %v after %q", err, r.Content)
		}
		if err := r.Add(ch); err != nil {
			t.Fatalf("Add() = %v", err)
		}
	}
	got := caseWant{Text: r.Content, Thoughts: r.Reasoning, ToolCalls: r.ToolCalls, Finish: r.FinishReason}
	if c.want.FinishClass != "" {
		got.FinishClass = llm.ClassifyFinish(r.FinishReason).String()
	}
	if diff := cmp.Diff(c.want, got); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
}

func checkFailure(t *testing.T, c *providerCase, p llm.Provider) {
	pol := recovery.DefaultPolicy()
	pol.Jitter = 0
	exec := recovery.Executor{Config: recovery.Config{Policy: pol}, Start: time.Now()}
	err := exec.Do(context.Background(), recovery.Chain{}, newObserver(t), failingAttempt(t, p))
	g, ok := recovery.AsGiveUp(err)
	if !ok {
		t.Fatalf("Do() = %v, want a give-up", err)
	}
	f := g.Failure
	got := caseWant{Code: f.Code, Status: f.Status, Dialect: f.Dialect, RecognisedBy: f.RecognisedBy, ContentFilter: f.ContentFilter,
		RetryAfterMs: f.RetryAfterMs, RetryAfterSource: f.RetryAfterSource, Attempts: c.replays, GiveUp: c.want.GiveUp}
	if diff := cmp.Diff(c.want, got); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
	if got := f.ModelNotFound(hello.Model); got != c.modelMissing {
		t.Errorf("ModelNotFound(%q) = %v, want %v", hello.Model, got, c.modelMissing)
	}
	for _, s := range c.want.GiveUp {
		if !strings.Contains(g.Message(), s) {
			t.Errorf("give-up message %q does not say %q", g.Message(), s)
		}
	}
}
