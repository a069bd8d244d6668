package llm

import openai "github.com/sashabaranov/go-openai"

// NoJoin makes o's streams return every event as a chunk of its own, as
// they did before deltas were joined: the baseline of the benchmarks.
func NoJoin(o *OpenAI) { o.noJoin = true }

// GoOpenAIRequest is the go-openai request o sends for req, with its
// messages in it, as go-openai itself would encode them all: the reference
// the spliced body is held to.
func GoOpenAIRequest(o *OpenAI, req Request) openai.ChatCompletionRequest {
	creq := o.chatRequest(req)
	for _, m := range req.Messages {
		creq.Messages = append(creq.Messages, wireMessage(m))
	}
	return creq
}

// BodyCacheSize is what o's cache of encoded messages holds.
func BodyCacheSize(o *OpenAI) (entries, bytes int) { return o.bodies.size() }

// BodyGenRequests is how many requests a generation of that cache lasts.
const BodyGenRequests = bodyGenRequests

// ResetBodyCache drops what o's cache of encoded messages holds.
func ResetBodyCache(o *OpenAI) {
	o.bodies.mu.Lock()
	defer o.bodies.mu.Unlock()
	o.bodies.entries, o.bodies.bytes, o.bodies.last = nil, 0, nil
}
