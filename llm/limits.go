package llm

import (
	"fmt"
	"net/http"
	"strings"
)

// What one response may make Rebound hold. Both are defaults of
// OpenAIConfig and bound memory whatever the provider sends: a flood of
// keep-alives, event lines or empty chunks ends at the first, an endless
// reply at the second. The request deadline does not cut a stream that is
// still producing (package recovery), so the reply cap is what ends one that
// never finishes.
const (
	// DefaultMaxBytesWithoutProgress: bytes a response may send without a
	// content, reasoning or tool-call delta (comments, event lines, empty
	// or role-only chunks, blank lines). Keep-alives every few seconds take
	// days to reach it.
	DefaultMaxBytesWithoutProgress = 1 << 20
	// DefaultMaxReplyBytes: content, reasoning and tool calls of one reply
	// together, about four million tokens; no model's output limit comes
	// near it. It also bounds one SSE line.
	DefaultMaxReplyBytes = 16 << 20
)

// limits are the per-response caps, defaults applied.
type limits struct {
	idle  int64 // bytes without progress
	reply int64 // reply text
	event int64 // one data line
}

func (l limits) withDefaults() limits {
	if l.idle <= 0 {
		l.idle = DefaultMaxBytesWithoutProgress
	}
	if l.reply <= 0 {
		l.reply = DefaultMaxReplyBytes
	}
	if l.event <= 0 {
		l.event = l.reply // an event cannot usefully carry more than a whole reply
	}
	return l
}

// tapBudget counts the bytes a response sent without progress (see
// OpenAIConfig.MaxBytesWithoutProgress) and keeps the limit that ended it,
// once one did. The tap adds what it drops, the stream the data events that
// carried no delta; a delta resets the count.
type tapBudget struct {
	lim     limits
	idle    int64
	limited *LimitError
}

// progress is the stream's report of a delta: what came before was not
// without progress after all.
func (b *tapBudget) progress() { b.idle = 0 }

// noProgress adds n bytes received without progress and reports the limit
// error once they pass the limit.
func (b *tapBudget) noProgress(n int64) *LimitError {
	b.idle += n
	if b.idle > b.lim.idle && b.limited == nil {
		b.limited = &LimitError{Kind: LimitIdle, Limit: b.lim.idle}
	}
	return b.limited
}

// eventTooLong reports, and records, a data line of n bytes so far that
// passed the one-event cap.
func (b *tapBudget) eventTooLong(n int64) bool {
	if n <= b.lim.event {
		return false
	}
	b.limited = &LimitError{Kind: LimitEvent, Limit: b.lim.event}
	return true
}

// LimitKind says which cap a response passed.
type LimitKind uint8

const (
	LimitIdle  LimitKind = iota + 1 // bytes without progress
	LimitReply                      // reply text
	LimitEvent                      // one SSE line
)

// LimitError ends an attempt whose response passed one of the caps. It
// matches ErrMalformedStream: the provider did something no well-behaved
// stream does, which package recovery classifies as PROTOCOL.
type LimitError struct {
	Kind  LimitKind
	Limit int64 // bytes
}

func (e *LimitError) Error() string {
	switch e.Kind {
	case LimitReply:
		return fmt.Sprintf("the provider sent more than %s of reply text (content, reasoning and tool calls) without finishing", formatBytes(e.Limit))
	case LimitEvent:
		return fmt.Sprintf("the provider sent a single event longer than %s", formatBytes(e.Limit))
	}
	return fmt.Sprintf("the provider sent %s without any reply text (only keep-alives, event lines or empty chunks)", formatBytes(e.Limit))
}

func (e *LimitError) Unwrap() error { return ErrMalformedStream }

// formatBytes renders n as a person reads sizes: "1.0 MiB", "64.0 KiB".
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// minSecretLen is the shortest API key that is redacted. Local servers
// (vLLM, llama.cpp, Ollama, LM Studio) accept any key, and people set "x",
// "EMPTY", "none" or "ollama": such a value is not a secret, and replacing
// it wherever it occurs would garble every error ("ma[redacted]imum" for the
// key "x") while protecting nothing. Provider-issued keys are far longer.
const minSecretLen = 8

// redactor removes one API key from provider-derived text. The zero value
// (no key, or one too short to be a secret) changes nothing.
type redactor string

func newRedactor(key string) redactor {
	if len(key) < minSecretLen {
		return ""
	}
	return redactor(key)
}

const redactedMark = "[redacted]"

func (r redactor) in(s string) bool { return r != "" && strings.Contains(s, string(r)) }

func (r redactor) str(s string) string {
	if !r.in(s) {
		return s
	}
	return strings.ReplaceAll(s, string(r), redactedMark)
}

func (r redactor) bytes(b []byte) []byte {
	if !r.in(string(b)) {
		return b
	}
	return []byte(r.str(string(b)))
}

// minKeyCut is the shortest start of the key that text cut short is taken
// to end with: a shorter one ("s", "sk-") is as likely ordinary text, and
// says nothing of the secret.
const minKeyCut = 4

// capped redacts a capture that may have been cut at its cap: beyond whole
// occurrences, a tail that is the start of the key (cut mid-key) goes too.
func (r redactor) capped(b []byte) []byte {
	b = r.bytes(b)
	if r == "" {
		return b
	}
	for k := min(len(r)-1, len(b)); k >= minKeyCut; k-- {
		if string(b[len(b)-k:]) == string(r[:k]) {
			return append(b[:len(b)-k:len(b)-k], redactedMark...)
		}
	}
	return b
}

// header returns h with the key removed from every value (and name); h is
// not modified.
func (r redactor) header(h http.Header) http.Header {
	dirty := false
	for k, vs := range h {
		dirty = dirty || r.in(k)
		for _, v := range vs {
			dirty = dirty || r.in(v)
		}
	}
	if !dirty {
		return h
	}
	c := make(http.Header, len(h))
	for k, vs := range h {
		rv := make([]string, len(vs))
		for i, v := range vs {
			rv[i] = r.str(v)
		}
		c[r.str(k)] = rv
	}
	return c
}
