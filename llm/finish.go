package llm

import (
	"strings"
)

// FinishClass is what a finish reason says about the reply it ends. The
// agent reads the class, never the provider's word: its stop reason, the
// truncation policy and whether tools run all follow from it (see
// finishTable).
type FinishClass uint8

const (
	// FinishUnknown: a reason not in the table. The stream treats it as a
	// failed attempt (FinishFailed): see finishTable for why.
	FinishUnknown FinishClass = iota
	// FinishEnd: the model ended its reply itself.
	FinishEnd
	// FinishToolUse: the model ended its reply to call tools.
	FinishToolUse
	// FinishTruncated: the reply was cut at an output limit; the truncation
	// policy escalates the budget, then continues.
	FinishTruncated
	// FinishRefused: a safety or content filter stopped the reply; the turn
	// ends with stopReason "refusal", keeping what was said.
	FinishRefused
	// FinishFailed: the provider broke off the reply (a network or server
	// failure behind it). The stream ends with an *Error, never io.EOF, so
	// the attempt is retried under the server-error budget.
	FinishFailed
)

func (c FinishClass) String() string {
	switch c {
	case FinishEnd:
		return "end"
	case FinishToolUse:
		return "tool use"
	case FinishTruncated:
		return "truncation"
	case FinishRefused:
		return "refusal"
	case FinishFailed:
		return "failed attempt"
	}
	return "unknown"
}

// finishTable is every finish reason Rebound knows, lower case, with the API
// it comes from. Reasons are matched in any case (Gemini and Cohere write
// theirs in capitals). docs/providers.md lists the table.
//
// A reason not in it is a failed attempt: retried under the server-error
// budget (recovery's SERVER), and the give-up names the reason. Taking it
// for a clean end is the one choice that can silently go wrong: the reply
// may be cut (a provider's network_error) or refused, and its tool calls
// would run on arguments that may be cut. A retry costs at most the server
// budget's requests, keeps what the editor was shown (live replies are
// continued from it), and an unknown word shows in the failure instead of
// passing unseen. Normal ends have well-worn names, listed here from a
// dozen APIs, so a working provider does not meet the default.
var finishTable = map[string]FinishClass{
	// OpenAI and most compatible servers; Anthropic (end_turn,
	// stop_sequence, tool_use); TGI and Together (eos_token, eos); Gemini
	// (STOP); Cohere (COMPLETE, TOOL_CALL); legacy function calling.
	"stop": FinishEnd, "end_turn": FinishEnd, "stop_sequence": FinishEnd, "eos": FinishEnd,
	"eos_token": FinishEnd, "end": FinishEnd, "complete": FinishEnd, "completed": FinishEnd, "finished": FinishEnd,

	"tool_calls": FinishToolUse, "function_call": FinishToolUse, "tool_use": FinishToolUse, "tool_call": FinishToolUse,

	// OpenAI (length), Anthropic and Gemini (max_tokens), Mistral
	// (model_length: the context window), OpenAI's Responses API
	// (max_output_tokens), Anthropic's model_context_window_exceeded,
	// Cohere's MAX_TOKENS and ERROR_LIMIT (the context limit).
	"length": FinishTruncated, "max_tokens": FinishTruncated, "model_length": FinishTruncated,
	"max_output_tokens": FinishTruncated, "model_context_window_exceeded": FinishTruncated,
	"error_limit": FinishTruncated, "max_length": FinishTruncated,
	// Anthropic's pause_turn: a long turn paused, to go on from the reply
	// as it stands, which is what continuing a cut reply does.
	"pause_turn": FinishTruncated,

	// OpenAI and Azure (content_filter), Zhipu/GLM (sensitive), Gemini
	// (SAFETY, RECITATION, PROHIBITED_CONTENT, BLOCKLIST, SPII,
	// IMAGE_SAFETY, LANGUAGE), Anthropic (refusal), Bedrock
	// (guardrail_intervened, content_filtered), Cohere (ERROR_TOXIC).
	"content_filter": FinishRefused, "sensitive": FinishRefused, "safety": FinishRefused,
	"recitation": FinishRefused, "prohibited_content": FinishRefused, "blocklist": FinishRefused,
	"spii": FinishRefused, "image_safety": FinishRefused, "language": FinishRefused,
	"refusal": FinishRefused, "guardrail_intervened": FinishRefused, "content_filtered": FinishRefused,
	"error_toxic": FinishRefused,

	// Zhipu/GLM (network_error), Mistral and OpenRouter (error), vLLM and
	// SGLang (abort), DeepSeek (insufficient_system_resource), Gemini
	// (MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, OTHER,
	// FINISH_REASON_UNSPECIFIED), Cohere (ERROR, USER_CANCEL).
	"network_error": FinishFailed, "error": FinishFailed, "abort": FinishFailed, "aborted": FinishFailed,
	"insufficient_system_resource": FinishFailed, "malformed_function_call": FinishFailed,
	"unexpected_tool_call": FinishFailed, "other": FinishFailed, "finish_reason_unspecified": FinishFailed,
	"user_cancel": FinishFailed, "cancelled": FinishFailed, "canceled": FinishFailed, "timeout": FinishFailed,
}

// ClassifyFinish returns the class of a finish reason, in any case; "" (no
// reason) is FinishUnknown.
func ClassifyFinish(reason string) FinishClass {
	if c, ok := finishTable[reason]; ok {
		return c
	}
	return finishTable[strings.ToLower(strings.TrimSpace(reason))]
}

// noFinish reports a finish_reason that stands for none: the words some
// servers write where JSON null belongs (DashScope's native API writes
// "null" on every chunk before the last). Taken as a reason, it would end
// the reply at its first chunk.
func noFinish(reason string) bool {
	r := strings.TrimSpace(reason)
	return r == "" || strings.EqualFold(r, "null") || strings.EqualFold(r, "none")
}

// FinishReasons returns the table's reasons of class c, for the docs.
func FinishReasons(c FinishClass) []string {
	var out []string
	for r, k := range finishTable {
		if k == c {
			out = append(out, r)
		}
	}
	return out
}

// Finished reports whether reason says the model ended its reply itself
// (FinishEnd). Anything else (a cut, a refusal, tool calls, a name Rebound
// does not know, none at all) may mean the text is not whole, so a reply
// that stands in for something else (a compaction's summary) is taken only
// when this holds.
func Finished(reason string) bool { return ClassifyFinish(reason) == FinishEnd }

// Truncated reports whether reason says the reply was cut at an output
// limit (FinishTruncated).
func Truncated(reason string) bool { return ClassifyFinish(reason) == FinishTruncated }

// Refused reports whether reason says a filter stopped the reply
// (FinishRefused).
func Refused(reason string) bool { return ClassifyFinish(reason) == FinishRefused }
