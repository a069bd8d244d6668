package llm

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Usage is advisory: it fills the editor's context bar and the cost, and
// nothing of the reply depends on it. So it is read apart from the rest of
// a chunk, and leniently: a field that cannot be read is dropped (with a
// warning, see usageReader.warn), never the chunk, and never the reply it
// ends. Providers send counts as 12, 12.0 or "12", a cost as a number or a
// string, and now and then something else; every extension read here
// (prompt_tokens_details, prompt_cache_hit_tokens, cost, x_groq.usage) goes
// through the same reader.

// MaxUsageTokens is the largest token count read from a provider; a count
// above it is no real request's and is dropped. Sums of a few stay far
// below any integer limit.
const MaxUsageTokens = 1 << 40

// MaxUsageCost is the largest cost one request is believed to have, in the
// provider's currency; a larger figure is dropped. It keeps every sum and
// every rounding of costs finite (a cost near the float64 limit becomes
// +Inf once scaled to be rounded, and +Inf cannot be written to the log).
const MaxUsageCost = 1e6

// usageReader reads the usage of one chunk and collects what it dropped.
type usageReader struct {
	redact  redactor // the key out of a quoted value before it is cut
	dropped []string // "field: why (value)", for the warning
}

func (r *usageReader) drop(field, why string, raw json.RawMessage) {
	if len(r.dropped) < 8 { // one chunk's worth; a flood says no more
		r.dropped = append(r.dropped, field+": "+why+" ("+clipRaw(r.redact.bytes(raw))+")")
	}
}

// clipRaw is a short, printable excerpt of a value for a warning.
func clipRaw(raw []byte) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}

// usage reads a usage object, then x_groq's (Groq's own place for it) when
// the chunk has none. It returns nil when neither holds a readable count
// or cost: no usage, rather than a made-up zero.
func (r *usageReader) usage(raw, xgroq json.RawMessage) *Usage {
	if isNull(raw) && !isNull(xgroq) {
		var x map[string]json.RawMessage
		if json.Unmarshal(xgroq, &x) != nil {
			r.drop("x_groq", "not an object", xgroq)
			return nil
		}
		raw = x["usage"]
		return r.object("x_groq.usage", raw)
	}
	return r.object("usage", raw)
}

func (r *usageReader) object(name string, raw json.RawMessage) *Usage {
	if isNull(raw) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		r.drop(name, "not an object", raw)
		return nil
	}
	prompt, okP := r.count(name+".prompt_tokens", m["prompt_tokens"])
	completion, okC := r.count(name+".completion_tokens", m["completion_tokens"])
	cost, okCost := r.cost(name+".cost", m["cost"])
	if !okP && !okC && !okCost {
		return nil
	}
	u := &Usage{PromptTokens: prompt, CompletionTokens: completion}
	if okCost {
		u.Cost = &cost
	}
	cached, ok := r.count(name+".prompt_cache_hit_tokens", m["prompt_cache_hit_tokens"]) // DeepSeek
	if d := m["prompt_tokens_details"]; !ok && !isNull(d) {                              // OpenAI
		var details map[string]json.RawMessage
		if json.Unmarshal(d, &details) != nil {
			r.drop(name+".prompt_tokens_details", "not an object", d)
		} else {
			cached, _ = r.count(name+".prompt_tokens_details.cached_tokens", details["cached_tokens"])
		}
	}
	u.CachedTokens = min(cached, u.PromptTokens)
	return u
}

// count reads a token count: a whole number from 0 to MaxUsageTokens,
// written as a number (12, 12.0, 1.2e1) or as a string of one ("12").
// Absent or null is no count, silently; anything else is dropped.
func (r *usageReader) count(field string, raw json.RawMessage) (int, bool) {
	f, ok := r.number(field, raw)
	if !ok {
		return 0, false
	}
	if f < 0 || f > MaxUsageTokens || f != math.Trunc(f) {
		r.drop(field, "not a token count from 0 to 2^40", raw)
		return 0, false
	}
	return int(f), true
}

// cost reads a cost: a finite amount from 0 to MaxUsageCost, as a number
// or a string of one.
func (r *usageReader) cost(field string, raw json.RawMessage) (float64, bool) {
	f, ok := r.number(field, raw)
	if !ok {
		return 0, false
	}
	if f < 0 || f > MaxUsageCost {
		r.drop(field, "not a cost from 0 to 1e6", raw)
		return 0, false
	}
	return f, true
}

// number reads a finite number, or a string holding one in JSON's syntax
// (so not "NaN", "Inf" or hexadecimal, which strconv would take).
func (r *usageReader) number(field string, raw json.RawMessage) (float64, bool) {
	if isNull(raw) {
		return 0, false
	}
	lit := bytes.TrimSpace(raw)
	if len(lit) > 0 && lit[0] == '"' {
		var s string
		if json.Unmarshal(lit, &s) != nil {
			r.drop(field, "unreadable string", raw)
			return 0, false
		}
		lit = []byte(strings.TrimSpace(s))
	}
	var n json.Number
	if !json.Valid(lit) || json.Unmarshal(lit, &n) != nil {
		r.drop(field, "not a number", raw)
		return 0, false
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		r.drop(field, "not a finite number", raw)
		return 0, false
	}
	return f, true
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
