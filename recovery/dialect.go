package recovery

import (
	"strconv"
	"strings"

	"github.com/rebound-agent/rebound/llm"
)

// Dialect is one entry of what real providers mean by the errors they send:
// a shape of failure facts and the failure code it stands for. The table is
// read once, when the facts of a provider's error are made (Classify); what
// decides a retry reads the facts it produced, never the message. User
// rules ([[recovery.rules]]) are asked before any policy, so a rule that
// matches a failure decides about it whatever the table said.
//
// Every entry is replayed from a recorded wire shape in
// testdata/providers; docs/providers.md lists the table.
type Dialect struct {
	ID       string // stable name, recorded as the failure's "dialect"
	Provider string // who sends it, for people

	// What it matches; every field that is set must match.
	Status int    // HTTP status; 0 = any
	Code   string // error.code, any case; "" = any
	Type   string // error.type (Gemini's error.status stands in), any case; "" = any
	// Phrases, for the providers whose only signal is their message: the
	// message must contain one of them (any case). Always alongside a
	// status, code or type, so a phrase never reclassifies another
	// provider's error.
	Phrases []string

	Means Code
	// ContentFilter: the provider's content filter refused the request;
	// the turn ends as a refusal, as a filtered reply does.
	ContentFilter bool
}

// Dialects is the table, structured codes and types first, then the
// entries that need a phrase. The first match wins.
var Dialects = []Dialect{
	// Before the rate-limit code it shares: one request larger than a
	// per-minute token limit, which no wait lets through and a smaller
	// request does (compaction, when on).
	{ID: "openai.request_too_large", Provider: "OpenAI (429), Groq (413)", Code: "rate_limit_exceeded",
		Phrases: []string{"request too large"}, Means: ContextOverflow},
	{ID: "openai.context_length_exceeded", Provider: "OpenAI, Azure, Groq and most compatible servers", Code: "context_length_exceeded", Means: ContextOverflow},
	{ID: "openai.context_length_exceeded_type", Provider: "compatible servers that put the code in type", Type: "context_length_exceeded", Means: ContextOverflow},
	{ID: "llamacpp.exceed_context_size", Provider: "llama.cpp server", Type: "exceed_context_size_error", Means: ContextOverflow},
	{ID: "openai.insufficient_quota", Provider: "OpenAI, Azure", Code: "insufficient_quota", Means: Quota},
	{ID: "openai.insufficient_quota_type", Provider: "OpenAI", Type: "insufficient_quota", Means: Quota},
	{ID: "anthropic.overloaded_error", Provider: "Anthropic", Type: "overloaded_error", Means: Overloaded},
	{ID: "anthropic.overloaded_error_code", Provider: "gateways that put Anthropic's type in code", Code: "overloaded_error", Means: Overloaded},
	{ID: "gemini.unavailable", Provider: "Gemini (OpenAI compatibility)", Status: 503, Type: "UNAVAILABLE", Means: Overloaded},
	{ID: "openai.rate_limit_exceeded", Provider: "OpenAI, Azure, Groq", Code: "rate_limit_exceeded", Means: RateLimit},
	{ID: "anthropic.rate_limit_error", Provider: "Anthropic", Type: "rate_limit_error", Means: RateLimit},
	{ID: "azure.content_filter", Provider: "Azure OpenAI", Code: "content_filter", Means: InvalidRequest, ContentFilter: true},

	// MiniMax's base_resp codes (llm reads them from a 200 with no
	// choices), from its API reference's error code table.
	{ID: "minimax.rate_limit", Provider: "MiniMax", Type: "base_resp", Code: "1002", Means: RateLimit},
	{ID: "minimax.tpm_limit", Provider: "MiniMax", Type: "base_resp", Code: "1039", Means: RateLimit},
	{ID: "minimax.insufficient_balance", Provider: "MiniMax", Type: "base_resp", Code: "1008", Means: Quota},
	{ID: "minimax.auth", Provider: "MiniMax", Type: "base_resp", Code: "1004", Means: Auth},
	{ID: "minimax.invalid_params", Provider: "MiniMax", Type: "base_resp", Code: "2013", Means: InvalidRequest},
	{ID: "minimax.input_sensitive", Provider: "MiniMax", Type: "base_resp", Code: "1026", Means: InvalidRequest, ContentFilter: true},
	{ID: "minimax.output_sensitive", Provider: "MiniMax", Type: "base_resp", Code: "1027", Means: InvalidRequest, ContentFilter: true},
	{ID: "minimax.server", Provider: "MiniMax", Type: "base_resp", Code: "1013", Means: Server},

	{ID: "xai.credits", Provider: "xAI", Status: 429, Code: "Some resource has been exhausted",
		Phrases: []string{"used all available credits", "spending limit"}, Means: Quota},
	{ID: "deepseek.context_length", Provider: "DeepSeek (and OpenAI-style servers without the code)", Status: 400, Type: "invalid_request_error",
		Phrases: []string{"maximum context length"}, Means: ContextOverflow},
	{ID: "anthropic.prompt_too_long", Provider: "Anthropic (OpenAI compatibility)", Status: 400, Type: "invalid_request_error",
		Phrases: []string{"prompt is too long"}, Means: ContextOverflow},
	{ID: "gemini.input_token_count", Provider: "Gemini (OpenAI compatibility)", Status: 400, Type: "INVALID_ARGUMENT",
		Phrases: []string{"exceeds the maximum number of tokens"}, Means: ContextOverflow},
	{ID: "vllm.max_context_length", Provider: "vLLM", Status: 400, Type: "BadRequestError",
		Phrases: []string{"maximum context length", "longer than the maximum model length"}, Means: ContextOverflow},
	{ID: "openrouter.context_length", Provider: "OpenRouter", Status: 400, Code: "400",
		Phrases: []string{"maximum context length"}, Means: ContextOverflow},
	{ID: "xai.prompt_length", Provider: "xAI", Status: 400, Code: "Client specified an invalid argument",
		Phrases: []string{"maximum prompt length"}, Means: ContextOverflow},
}

// dialectOf returns the first entry of the table that e matches, or nil.
func dialectOf(e *llm.Error) *Dialect {
	for i := range Dialects {
		if Dialects[i].matches(e) {
			return &Dialects[i]
		}
	}
	return nil
}

func (d *Dialect) matches(e *llm.Error) bool {
	// An error inside a stream is matched as its HTTP equivalent: by the
	// HTTP-like code it carries, and when it carries none, by its code,
	// type and phrases alone (it has no status to differ).
	if st := statusOf(e); d.Status != 0 && st != d.Status && !(e.InStream && st == 0) {
		return false
	}
	if d.Code != "" && !strings.EqualFold(e.Code, d.Code) {
		return false
	}
	if d.Type != "" && !strings.EqualFold(e.Type, d.Type) {
		return false
	}
	if len(d.Phrases) == 0 {
		return true
	}
	msg := strings.ToLower(e.Message)
	for _, p := range d.Phrases {
		if strings.Contains(msg, strings.ToLower(p)) {
			return true
		}
	}
	return false
}

// Shape describes what the entry matches, for the table in the docs.
func (d *Dialect) Shape() string {
	var parts []string
	if d.Status != 0 {
		parts = append(parts, "HTTP "+strconv.Itoa(d.Status))
	}
	if d.Code != "" {
		parts = append(parts, "code `"+d.Code+"`")
	}
	if d.Type != "" {
		parts = append(parts, "type `"+d.Type+"`")
	}
	if len(d.Phrases) > 0 {
		q := make([]string, len(d.Phrases))
		for i, p := range d.Phrases {
			q[i] = "\"" + p + "\""
		}
		parts = append(parts, "message says "+strings.Join(q, " or "))
	}
	return strings.Join(parts, ", ")
}
