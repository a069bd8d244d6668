package llm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
)

var errSent = errors.New("body taken")

// takeDoer keeps the body of the request it is given and fails it, as a
// refused connection would.
type takeDoer struct {
	body, again []byte // again: what GetBody gives
	length      int64  // Content-Length
	requests    int
}

func (d *takeDoer) Do(r *http.Request) (*http.Response, error) {
	d.requests++
	d.body, d.again, d.length = nil, nil, r.ContentLength
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	d.body = b
	if r.GetBody != nil {
		rc, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		if d.again, err = io.ReadAll(rc); err != nil {
			return nil, err
		}
	}
	return nil, errSent
}

// bodyRig sends each request through the adapter and through go-openai
// alone, and holds the adapter's body to go-openai's.
type bodyRig struct {
	t        testing.TB
	o        *llm.OpenAI
	got, ref takeDoer
	refc     *openai.Client
}

func newBodyRig(t testing.TB, baseURL string) *bodyRig {
	r := &bodyRig{t: t}
	r.o = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: baseURL, APIKey: "sk-test", HTTPClient: &r.got})
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL, cfg.HTTPClient = baseURL, &r.ref
	r.refc = openai.NewClientWithConfig(cfg)
	return r
}

// check sends req both ways and compares the bodies byte for byte. A
// continued message (Prefix on the last) is go-openai's encoding with
// ,"prefix":true before its closing brace: nothing else differs.
func (r *bodyRig) check(req llm.Request) {
	t := r.t
	t.Helper()
	n := len(req.Messages)
	prefix := n > 0 && req.Messages[n-1].Prefix
	r.got.body, r.got.requests = nil, 0
	_, err := r.o.Stream(context.Background(), req)
	if prefix && req.Messages[n-1].Role != llm.RoleAssistant {
		if err == nil || !strings.Contains(err.Error(), "not the assistant's") || r.got.requests != 0 {
			t.Fatalf("a continued %q message: Stream() = %v after %d requests, want it refused before any", req.Messages[n-1].Role, err, r.got.requests)
		}
		return
	}
	_, referr := r.refc.CreateChatCompletionStream(context.Background(), llm.GoOpenAIRequest(r.o, req))
	if !errors.Is(referr, errSent) {
		// go-openai refused the request itself (a reasoning model's
		// parameters): so must the adapter.
		if errors.Is(err, errSent) || err == nil {
			t.Fatalf("go-openai refuses the request (%v), the adapter sent it", referr)
		}
		return
	}
	if !errors.Is(err, errSent) {
		t.Fatalf("Stream() = %v, want the body sent", err)
	}
	got, want := r.got.body, r.ref.body
	if r.got.length != int64(len(got)) || !bytes.Equal(r.got.again, got) {
		t.Fatalf("Content-Length %d and GetBody %q for a body of %d bytes %q", r.got.length, r.got.again, len(got), got)
	}
	if prefix {
		const mark = `,"prefix":true}`
		if bytes.Count(got, []byte(mark)) != 1 || !bytes.Contains(got, []byte(mark+"]")) {
			t.Fatalf("a continued message is not marked once, at the end of the list:\n%s", got)
		}
		got = bytes.Replace(got, []byte(mark), []byte("}"), 1)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("body differs from go-openai's:\n got %s\nwant %s", got, want)
	}
}

// texts are the strings histories are made of: what JSON escapes (HTML,
// U+2028, controls, quotes), what it repairs (invalid UTF-8), what looks
// like the body's own syntax, and none at all.
var texts = []string{
	"", "hello", "héllo wörld ✓ 日本語 🎉", "<b>&amp;</b> a < b && c > d", "line\nbreak\ttab\r",
	`quote " and backslash \ and \"`, "\u2028\u2029", "\x00\x01\x1f\x7f", "\xff\xfe bad \xc3", `{"json":true}`,
	`,"prefix":true}`, `],"stream":true`, "system", "assistant", strings.Repeat("long line of text ", 40),
}

// bodyScript runs a made-up conversation through a bodyRig: sessions that
// grow, are compacted, truncated and loaded again; messages changed in
// place after they were sent; settings that change between requests;
// continuations in place and with a prompt. ops picks the steps; extra is a
// string more (the fuzzer's).
func bodyScript(t testing.TB, seed uint64, extra string, ops []byte) {
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rig := newBodyRig(t, "https://api.example.test/v1")
	pool := append(append([]string{}, texts...), extra)
	if len(extra) > 1 {
		pool = append(pool, extra[:len(extra)/2], extra[len(extra)/2:])
	}
	pick := func() string {
		s := pool[rnd.IntN(len(pool))]
		if rnd.IntN(3) == 0 {
			return strings.Clone(s) // equal, at another address
		}
		return s
	}
	message := func() llm.Message {
		m := llm.Message{Content: pick()}
		switch rnd.IntN(6) {
		case 0:
			m.Role = llm.RoleSystem
		case 1:
			m.Role = llm.RoleUser
			for range rnd.IntN(3) {
				m.Images = append(m.Images, llm.Image{Name: pick(), MimeType: pick(), Data: pick()})
			}
		case 2:
			m.Role = llm.RoleAssistant
			if rnd.IntN(2) == 0 {
				m.Reasoning = pick()
			}
			for range rnd.IntN(4) {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: pick(), Name: pick(), Arguments: pick()})
			}
		case 3:
			m.Role, m.ToolCallID = llm.RoleTool, pick()
		case 4:
			m.Role = llm.Role(pick())
		default:
			m.Role = llm.RoleAssistant
		}
		m.Prefix = rnd.IntN(8) == 0 // not last: not encoded
		return m
	}
	sessions := [2][]llm.Message{{{Role: llm.RoleSystem, Content: pick()}}, {{Role: llm.RoleSystem, Content: pick()}}}
	cur := 0
	req := llm.Request{Model: "m", MaxTokens: 100}
	var buf []llm.Message // one buffer for every request, as the agent's
	models := []string{"m", "gpt-5-mini", "o3", "deepseek-chat", "modèle <&>", ""}
	for _, op := range ops {
		h := &sessions[cur]
		switch op % 12 {
		case 0, 1, 2: // the history grows
			for range 1 + rnd.IntN(3) {
				*h = append(*h, message())
			}
		case 3: // the system prompt is replaced in place (a mode change)
			(*h)[0].Content = pick()
		case 4: // a tool call changed in its slice, after it was sent
			for i := range *h {
				if m := &(*h)[i]; len(m.ToolCalls) > 0 {
					m.ToolCalls[rnd.IntN(len(m.ToolCalls))].Arguments = pick()
					break
				}
			}
		case 5: // an image changed in its slice
			for i := range *h {
				if m := &(*h)[i]; len(m.Images) > 0 {
					m.Images[0].Data = pick()
					break
				}
			}
		case 6: // compaction: the system prompt, a summary, the last few
			keep := min(len(*h)-1, rnd.IntN(4))
			c := []llm.Message{(*h)[0], {Role: llm.RoleUser, Content: pick()}}
			*h = append(c, (*h)[len(*h)-keep:]...)
		case 7: // truncated
			*h = (*h)[:1+rnd.IntN(len(*h))]
		case 8: // the other session's turn
			cur = 1 - cur
			h = &sessions[cur]
		case 9: // settings change
			req.Model, req.MaxTokens, req.ReasoningEffort = models[rnd.IntN(len(models))], rnd.IntN(3)*1000, []string{"", "low", "high"}[rnd.IntN(3)]
			req.Tools = nil
			for range rnd.IntN(3) {
				req.Tools = append(req.Tools, llm.ToolDef{Name: pick(), Description: pick()})
			}
		case 10: // loaded again: equal messages, new strings
			for i := range *h {
				m := &(*h)[i]
				m.Content = strings.Clone(m.Content)
				m.ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...)
			}
		case 11: // reasoning is kept, not sent
			(*h)[rnd.IntN(len(*h))].Reasoning = pick()
		}
		buf = append(buf[:0], *h...)
		switch rnd.IntN(6) {
		case 0: // continued in place
			role := llm.RoleAssistant
			if rnd.IntN(8) == 0 {
				role = llm.RoleUser
			}
			buf = append(buf, llm.Message{Role: role, Content: pick(), Prefix: true})
		case 1: // continued with a prompt
			buf = append(buf, llm.Message{Role: llm.RoleAssistant, Content: pick()}, llm.Message{Role: llm.RoleUser, Content: "Continue."})
		}
		req.Messages = buf
		rig.check(req)
	}
}

// The body the adapter sends is go-openai's, byte for byte, whatever the
// history and however it changed since the last request: the property
// over made-up conversations (FuzzRequestBody explores further).
func TestOpenAI_BodyIsGoOpenAIs(t *testing.T) {
	for seed := range uint64(testkit.Cases(200, 50)) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		ops := make([]byte, 40)
		for i := range ops {
			ops[i] = byte(rnd.IntN(256))
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { bodyScript(t, seed, texts[seed%uint64(len(texts))], ops) })
	}
}

func FuzzRequestBody(f *testing.F) {
	f.Add(uint64(1), "héllo <b>&\u2028", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add(uint64(7), "\xff", []byte{0, 0, 4, 4, 3, 8, 0, 8, 6, 10, 0})
	f.Fuzz(func(t *testing.T, seed uint64, extra string, ops []byte) {
		if len(ops) > 64 || len(extra) > 1<<10 {
			return
		}
		bodyScript(t, seed, extra, ops)
	})
}

// A message changed after it was sent (in place, in the slice the cache
// saw) is sent as it is now, never as it was encoded.
func TestOpenAI_BodyFollowsAMessageChangedInPlace(t *testing.T) {
	rig := newBodyRig(t, "https://api.example.test/v1")
	h := []llm.Message{
		{Role: llm.RoleSystem, Content: "You may write files."},
		{Role: llm.RoleUser, Content: "Look.", Images: []llm.Image{{MimeType: "image/png", Data: "AAAA"}}},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a"}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: "contents"},
	}
	req := llm.Request{Model: "m", Messages: h}
	rig.check(req)
	before := string(rig.got.body)
	h[0].Content = "You may only read."
	h[1].Images[0].Data = "BBBB"
	h[2].ToolCalls[0].Arguments = `{"path":"b"}`
	h[2].ToolCalls[0].Name = "write_file"
	rig.check(req)
	for _, stale := range []string{"You may write files.", "AAAA", `\"a\"`, "read_file"} {
		if !strings.Contains(before, stale) || strings.Contains(string(rig.got.body), stale) {
			t.Errorf("%q: in the first body %v, in the second %v; want only in the first", stale, strings.Contains(before, stale), strings.Contains(string(rig.got.body), stale))
		}
	}
}

// A long session's requests keep the cache at about one encoding of what
// they send: what a compaction dropped, and another session no longer
// prompted, are gone within two generations. A day of work: 3,000
// requests, each adding a tool call and its result, compacted every 150.
func TestOpenAI_BodyCacheIsBounded(t *testing.T) {
	d := &takeDoer{}
	o := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.example.test/v1", HTTPClient: d})
	other := []llm.Message{{Role: llm.RoleSystem, Content: "another session"}, {Role: llm.RoleUser, Content: strings.Repeat("x", 1<<16)}}
	h := []llm.Message{{Role: llm.RoleSystem, Content: "system"}}
	var recent [][]byte // bodies of the last 2 generations' requests
	send := func(msgs []llm.Message) {
		if _, err := o.Stream(t.Context(), llm.Request{Model: "m", Messages: msgs}); !errors.Is(err, errSent) {
			t.Fatal(err)
		}
		recent = append(recent, d.body)
		if len(recent) > 2*llm.BodyGenRequests {
			recent = recent[1:]
		}
	}
	send(other)
	// A compaction every 150 requests, then 100 more after the last. Under
	// -race, 3 compactions instead of 20 (550 requests): each is the same
	// path (a generation of 16 requests holds the compacted-away messages,
	// the next drops them), and one goroutine gives the detector nothing.
	requests := 3100
	if raceEnabled {
		requests = 550
	}
	maxBytes, maxBody := 0, 0
	for i := range requests {
		if i%150 == 149 && i < requests-100 {
			h = append([]llm.Message{h[0], {Role: llm.RoleUser, Content: fmt.Sprintf("summary %d", i)}}, h[len(h)-4:]...)
		}
		h = append(h,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "read_file", Arguments: `{"path":"x"}`}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: fmt.Sprintf("call_%d", i), Content: strings.Repeat(fmt.Sprintf("line %d\n", i), 50)})
		send(h)
		// Everything the cache holds was sent by one of the requests of
		// the last two generations; their bodies together bound it.
		_, bytes := llm.BodyCacheSize(o)
		bound := 0
		for _, b := range recent {
			bound += len(b)
		}
		if bytes > bound {
			t.Fatalf("request %d: the cache holds %d bytes, more than the last %d bodies (%d)", i, bytes, len(recent), bound)
		}
		maxBytes, maxBody = max(maxBytes, bytes), max(maxBody, len(d.body))
	}
	// 100 requests after the last compaction, the cache holds the history
	// and nothing else: not what compactions dropped, not the other session.
	entries, bytes := llm.BodyCacheSize(o)
	live := len(recent[len(recent)-1])
	t.Logf("after %d requests: %d entries, %d bytes; the last body %d bytes; at most %d bytes held, %d sent", requests, entries, bytes, live, maxBytes, maxBody)
	if bytes > live || entries > len(h) {
		t.Errorf("the cache holds %d bytes in %d entries for a history of %d messages sent as %d bytes", bytes, entries, len(h), live)
	}
	if maxBytes > 2*maxBody {
		t.Errorf("the cache held up to %d bytes; the largest request sent %d", maxBytes, maxBody)
	}
}

// Requests of sessions running at once share the cache safely (go test
// -race), and each body is its own session's.
func TestOpenAI_BodyCacheSharedBySessions(t *testing.T) {
	shared := strings.Repeat("the same tool output ", 20)
	var wg sync.WaitGroup
	o := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.example.test/v1", HTTPClient: lockedTake{}})
	for s := range 4 {
		wg.Go(func() {
			h := []llm.Message{{Role: llm.RoleSystem, Content: fmt.Sprintf("session %d", s)}}
			for i := range 50 {
				h = append(h, llm.Message{Role: llm.RoleTool, ToolCallID: fmt.Sprintf("c%d", i), Content: shared})
				ctx := context.WithValue(context.Background(), takeKey{}, new([]byte))
				if _, err := o.Stream(ctx, llm.Request{Model: "m", Messages: h}); !errors.Is(err, errSent) {
					t.Error(err)
					return
				}
				body := *ctx.Value(takeKey{}).(*[]byte)
				if msgs := wireMessages(t, body); len(msgs) != len(h) || msgs[0]["content"] != h[0].Content {
					t.Errorf("session %d request %d: %d messages, first %v", s, i, len(msgs), msgs[0])
					return
				}
			}
		})
	}
	wg.Wait()
}

type takeKey struct{}

// discardDoer reads a request's body without keeping it, and fails it.
type discardDoer struct{}

func (discardDoer) Do(r *http.Request) (*http.Response, error) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return nil, err
	}
	return nil, errSent
}

// lockedTake hands each request's body to its caller through the context.
type lockedTake struct{}

func (lockedTake) Do(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	*r.Context().Value(takeKey{}).(*[]byte) = b
	return nil, errSent
}

// The adapter's work before a request does not grow with the history: a
// request that adds one message to a history of 2,000 allocates as often
// as one that adds it to a history of 10.
func TestOpenAI_BodyAllocationsFlat(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under -race")
	}
	allocs := func(n int) float64 {
		o := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.example.test/v1", HTTPClient: discardDoer{}})
		h := []llm.Message{{Role: llm.RoleSystem, Content: "system"}}
		for i := range n {
			h = append(h, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("message %d", i)})
		}
		send := func() {
			if _, err := o.Stream(context.Background(), llm.Request{Model: "m", Messages: h}); !errors.Is(err, errSent) {
				t.Fatal(err)
			}
		}
		send()
		i := 0
		return testing.AllocsPerRun(20, func() {
			i++
			h = append(h[:n+1], llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("new %d", i)})
			send()
		})
	}
	short, long := allocs(10), allocs(2000)
	t.Logf("allocations per request: %v with 10 messages, %v with 2000", short, long)
	if long > short+5 {
		t.Errorf("a request allocates %v times with 2000 messages, %v with 10: it grows with the history", long, short)
	}
}
