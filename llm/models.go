package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// ModelLister is a Provider that can say which models it serves.
type ModelLister interface {
	// ListModels returns the ids of the provider's models, sorted, without
	// duplicates, bounded by MaxModels.
	ListModels(ctx context.Context) ([]string, error)
}

// Bounds on a model list: a provider (or a proxy in front of it) that sends
// megabytes, thousands of ids or ids that are not names costs nothing.
const (
	MaxModels         = 500
	maxModelIDLen     = 200
	maxModelsBodySize = 4 << 20
)

var _ ModelLister = (*OpenAI)(nil)

// ContextWindows is a Provider whose model list may say how many tokens
// each model's context holds.
type ContextWindows interface {
	// ContextWindow is model's window as the last model list said; 0 when
	// it did not.
	ContextWindow(model string) uint64
}

var _ ContextWindows = (*OpenAI)(nil)

// maxContextWindow bounds a window a model list may claim, in tokens: a
// larger one is no window, only a broken or hostile list.
const maxContextWindow = 100_000_000

// contextWindows reads, from a model list's body, the window of each of
// ids where the provider says it. Providers name it differently (recreated
// from their docs): OpenRouter, Together and Fireworks `context_length`
// (OpenRouter also under top_provider), Groq `context_window`, Mistral and
// LM Studio `max_context_length`, vLLM `max_model_len`. A value that is no
// whole number in (0, maxContextWindow] is ignored.
func contextWindows(body []byte, ids []string) map[string]uint64 {
	var list struct {
		Data []struct {
			ID               string          `json:"id"`
			ContextLength    json.RawMessage `json:"context_length"`
			ContextWindow    json.RawMessage `json:"context_window"`
			MaxContextLength json.RawMessage `json:"max_context_length"`
			MaxModelLen      json.RawMessage `json:"max_model_len"`
			TopProvider      struct {
				ContextLength json.RawMessage `json:"context_length"`
			} `json:"top_provider"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil {
		return nil
	}
	listed := make(map[string]bool, len(ids))
	for _, id := range ids {
		listed[id] = true
	}
	windows := map[string]uint64{}
	for _, m := range list.Data {
		if !listed[m.ID] {
			continue
		}
		for _, raw := range []json.RawMessage{m.ContextLength, m.TopProvider.ContextLength, m.ContextWindow, m.MaxContextLength, m.MaxModelLen} {
			if n, err := strconv.ParseUint(string(raw), 10, 64); err == nil && n > 0 && n <= maxContextWindow {
				windows[m.ID] = n
				break
			}
		}
	}
	return windows
}

// notChat are parts of the ids of models that are known not to answer chat
// completions: OpenAI's /v1/models lists embedding, speech, transcription,
// image, video, moderation, realtime and legacy completion models beside
// the chat ones, and picking one fails every turn.
var notChat = []string{
	"embedding", "embed", "tts", "whisper", "transcribe", "dall-e", "gpt-image", "sora",
	"moderation", "realtime", "davinci-002", "babbage-002", "computer-use",
}

// ChatModel reports whether the model id is not known to be one that
// cannot chat. Unknown ids are kept: most providers list chat models only.
func ChatModel(id string) bool {
	lower := strings.ToLower(id)
	for _, part := range notChat {
		if strings.Contains(lower, part) {
			return false
		}
	}
	return true
}

// CleanModelIDs keeps the ids that can name a model (CheckModelID), sorted
// and without duplicates, at most MaxModels of them.
func CleanModelIDs(ids []string) []string {
	out := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return CheckModelID(id) != nil })
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxModels {
		out = out[:MaxModels]
	}
	return out
}

// ErrModelID says what a model id must be. It is the one rule for every
// id from outside: a provider's list drops those that fail it
// (CleanModelIDs), and a configured one that fails stops the start, so no
// id sent to a provider or shown in a model picker is long or holds a
// control character.
var ErrModelID = fmt.Errorf("must be a model name: 1 to %d bytes of printable characters, without spaces", maxModelIDLen)

// CheckModelID returns ErrModelID unless id can name a model: non-empty,
// at most 200 bytes, valid UTF-8, printable (no control or format
// character), without spaces.
func CheckModelID(id string) error {
	if id == "" || len(id) > maxModelIDLen || !utf8.ValidString(id) ||
		strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == utf8.RuneError }) {
		return ErrModelID
	}
	return nil
}

// TakesReasoningEffort reports whether model is one go-openai knows to be a
// reasoning model (OpenAI's o-series, gpt-5, …), which takes
// reasoning_effort. Other providers' reasoning models are not recognised:
// provider.reasoning_effort says they take it.
func TakesReasoningEffort(model string) bool {
	err := openai.NewReasoningValidator().Validate(openai.ChatCompletionRequest{Model: model, MaxTokens: 1})
	return errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated)
}

// teeKey carries a buffer that gets a copy of a plain response body as it
// is read (bounded by the body limit), for fields go-openai does not keep.
type teeKey struct{}

func teeBody(req *http.Request, resp *http.Response) {
	if buf, ok := req.Context().Value(teeKey{}).(*bytes.Buffer); ok && resp != nil && resp.Body != nil {
		resp.Body = teedBody{r: io.TeeReader(resp.Body, buf), c: resp.Body}
	}
}

type teedBody struct {
	r io.Reader
	c io.Closer
}

func (b teedBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b teedBody) Close() error               { return b.c.Close() }

// bodyLimitKey carries the most bytes a plain (not streamed) response body
// may have, for requests that are not attempts (the model list).
type bodyLimitKey struct{}

// ErrBodyTooLarge: a response body was longer than the request allowed.
var ErrBodyTooLarge = errors.New("response body is too large")

// limitBody makes resp's body fail with ErrBodyTooLarge past the limit in
// req's context, if there is one.
func limitBody(req *http.Request, resp *http.Response) {
	if n, ok := req.Context().Value(bodyLimitKey{}).(int64); ok && resp != nil && resp.Body != nil {
		resp.Body = &limitedBody{rc: resp.Body, left: n}
	}
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, ErrBodyTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
