package agent

import (
	"context"
	"math"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// Context-window and cost accounting for usage_update (issue #20). This file
// holds the pure parts — the window table, the estimate and the price
// arithmetic — so the hook in the turn loop stays a line or two.

// windowTable is the context window of well-known model families, matched by
// prefix of the model id with any "vendor/" prefix (OpenRouter) removed;
// the longest matching prefix wins. A model not here and not configured
// (provider.context_window) has no known size: 0.
var windowTable = []struct {
	prefix string
	tokens uint64
}{
	{"gpt-4o", 128_000},
	{"gpt-4.1", 1_047_576},
	{"gpt-4-turbo", 128_000},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"gpt-5", 400_000},
	{"o1", 200_000},
	{"o1-mini", 128_000},
	{"o3", 200_000},
	{"o4-mini", 200_000},
	{"deepseek-chat", 128_000},
	{"deepseek-reasoner", 128_000},
	{"claude-", 200_000},
	{"mistral-large", 128_000},
	{"codestral", 256_000},
	{"gemini-1.5-pro", 2_097_152},
	{"gemini-2.5", 1_048_576},
	{"llama-3.1", 128_000},
	{"qwen2.5-coder", 32_768},
}

// knownWindow is what is known of model's context window besides the
// table: provider.context_window, else what the provider's model list said
// (0 when neither says).
func (c *catalog) knownWindow(model string) uint64 {
	if c.contextWindow > 0 {
		return c.contextWindow
	}
	if w, ok := c.provider().(llm.ContextWindows); ok {
		return w.ContextWindow(model)
	}
	return 0
}

// windowOf is the context window of model: configured (knownWindow) wins,
// then the table; 0 when unknown.
func windowOf(model string, configured uint64) uint64 {
	if configured > 0 {
		return configured
	}
	id := strings.ToLower(model)
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	var best, size uint64
	for _, w := range windowTable {
		if strings.HasPrefix(id, w.prefix) && uint64(len(w.prefix)) > best {
			best, size = uint64(len(w.prefix)), w.tokens
		}
	}
	return size
}

// estimateTokens is a deliberately rough count for providers that report no
// usage: about four bytes of text per token, plus a few tokens of framing
// per message. Callers mark the figure as an estimate in _meta.
func estimateTokens(msgs []llm.Message) uint64 {
	var n uint64
	for _, m := range msgs {
		b := len(m.Content)
		for _, tc := range m.ToolCalls {
			b += len(tc.Name) + len(tc.Arguments)
		}
		n += uint64(b+3)/4 + 4
	}
	return n
}

// Prices are per million tokens, in Currency; a zero Prices means the user
// configured none and no cost may be shown.
type Prices struct {
	Input, CachedInput, Output float64
	Currency                   string
}

func (p Prices) set() bool { return p.Input > 0 || p.CachedInput > 0 || p.Output > 0 }

// stepCost is what one request cost: the provider's own figure when it
// billed one, else the configured prices applied to its usage; ok is false
// when neither exists, so no figure is made up.
func stepCost(u llm.Usage, p Prices) (amount float64, ok bool) {
	if u.Cost != nil {
		return *u.Cost, true
	}
	if !p.set() {
		return 0, false
	}
	cached := min(u.CachedTokens, u.PromptTokens)
	fresh := u.PromptTokens - cached
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	return (float64(fresh)*p.Input + float64(cached)*cachedPrice + float64(u.CompletionTokens)*p.Output) / 1e6, true
}

// shouldCompact reports whether a context of used tokens in a window of
// size has reached the fill fraction at which to compact before the
// provider refuses; an unknown window or fill never triggers it.
func shouldCompact(used, size uint64, fill float64) bool {
	if size == 0 || fill <= 0 || fill > 1 {
		return false
	}
	return float64(used) >= fill*float64(size)
}

// UsageMetaKey is the `_meta` key of a usage_update whose figure Rebound
// estimated, the provider having reported none: {"estimated": true}.
const UsageMetaKey = "rebound/usage"

// UsageMeta is the payload under UsageMetaKey.
type UsageMeta struct {
	Estimated bool `json:"estimated"`
}

// maxSessionCost bounds the cost a session adds up. A provider's figure for
// one request is already bounded (llm.MaxUsageCost) and configured prices
// are (config), so only a sum over very many requests, or a figure read
// back from a log another version wrote, gets here; it is clamped, not
// dropped, since the session did cost at least that. Clamped, every sum and
// the rounding below stay finite: the step/end record that carries the sum
// can always be written (JSON has no Inf or NaN).
const maxSessionCost = 1e12

// addCost adds a step's cost to a session's: a figure that is not a finite
// amount from 0 to maxSessionCost is dropped (nothing believable to add;
// ok is false), the sum is clamped to maxSessionCost.
func addCost(total, step float64) (sum float64, ok bool) {
	if !(step >= 0 && step <= maxSessionCost) { // also NaN
		return total, false
	}
	return min(total+step, maxSessionCost), true
}

// roundCost rounds a session's cost well below any currency's cent, so
// float sums read as the editor would show them (0.0024575, not
// 0.0024574999999999996). Within maxSessionCost the scaled amount is
// finite; an amount outside it is clamped first.
func roundCost(c float64) float64 {
	if !(c >= 0) {
		return 0
	}
	c = min(c, maxSessionCost)
	return math.Round(c*1e10) / 1e10
}

// sessionUsage is what a session's usage_update accumulates across steps.
type sessionUsage struct {
	cost   float64
	costed bool // some step had a cost; until then none is shown
}

// usageMeter readies the usage of each attempt whose provider request
// finished: the figures its step/end records, and the usage_update the
// editor is sent once that step/end is written (record, then send). It
// knows the session only through the functions it is given.
type usageMeter struct {
	// window is what is known of a model's context window besides the
	// table (catalog.knownWindow).
	window func(model string) uint64
	prices Prices
	// last is the session's last recorded usage, nil when none: the
	// session's cost so far is read back from it, so it survives a restart.
	last func() *session.StepUsage

	rec   *session.StepUsage // the current attempt's, for its step/end
	shown *acp.SessionUpdate // sent once that step/end is written; nil: nothing to show
}

// ready readies the usage_update of an attempt whose provider request has
// finished: used is the provider's prompt+completion tokens (the tokens the
// next request starts from), or an estimate marked in _meta when it
// reported none. The attempt's step/end records it (take), and the turn
// sends it after that record (best effort, like every status update); an
// attempt ended otherwise (failed, discarded) shows none.
func (m *usageMeter) ready(req llm.Request, reply *llm.Reply) {
	u, su, ok := usageUpdate(req, reply, m.window(req.Model), m.prices, sessionUsageOf(m.last()))
	rec := &session.StepUsage{Used: u.Used, Size: u.Size, Estimated: reply.Usage == nil}
	if r := reply.Usage; r != nil {
		rec.PromptTokens, rec.CompletionTokens, rec.CachedTokens = r.PromptTokens, r.CompletionTokens, r.CachedTokens
	}
	if su.costed {
		rec.Cost, rec.Currency = &u.Cost.Amount, u.Cost.Currency
	}
	m.rec, m.shown = rec, nil
	if ok {
		m.shown = &u
	}
}

// take hands over the current attempt's usage, for its step/end, and the
// update to send once that is written, and forgets both: an attempt's
// usage is recorded, and shown, at most once.
func (m *usageMeter) take() (*session.StepUsage, *acp.SessionUpdate) {
	rec, shown := m.rec, m.shown
	m.reset()
	return rec, shown
}

// reset forgets the usage of an attempt that ends without its figures (a
// new attempt begins).
func (m *usageMeter) reset() { m.rec, m.shown = nil, nil }

func sessionUsageOf(u *session.StepUsage) sessionUsage {
	if u == nil || u.Cost == nil {
		return sessionUsage{}
	}
	c, ok := addCost(0, min(*u.Cost, maxSessionCost)) // clamped: it did cost that much
	return sessionUsage{cost: c, costed: ok}
}

// replayUsage sends, after a load's replay, the usage_update the editor was
// last sent, so its fill bar is back where it was; nothing when no step
// recorded usage with a known window.
func replayUsage(ctx context.Context, c acp.Client, sessionID string, h *history) error {
	u := h.fill.Last()
	if u == nil || u.Size == 0 {
		return nil
	}
	up := acp.UsageUpdate(u.Used, u.Size, nil)
	if u.Cost != nil {
		up.Cost = &acp.Cost{Amount: *u.Cost, Currency: u.Currency}
	}
	if u.Estimated {
		up.Meta = acp.Meta{UsageMetaKey: UsageMeta{Estimated: true}}
	}
	return c.Update(ctx, sessionID, up)
}

// usageUpdate is reportUsage's pure part: the update to send, the session's
// usage after this step, and whether to send at all. With no known window
// there is nothing an editor can show (the schema requires a size, and a
// made-up one would draw a wrong fill bar), so no update is sent; the cost
// is still counted, so a later update shows the whole session's.
func usageUpdate(req llm.Request, reply *llm.Reply, configured uint64, prices Prices, su sessionUsage) (acp.SessionUpdate, sessionUsage, bool) {
	u := acp.UsageUpdate(0, 0, nil)
	if reply.Usage != nil {
		u.Used = uint64(max(reply.Usage.PromptTokens, 0)) + uint64(max(reply.Usage.CompletionTokens, 0))
		if c, ok := stepCost(*reply.Usage, prices); ok {
			if sum, ok := addCost(su.cost, c); ok {
				su.cost, su.costed = sum, true
			}
		}
	} else {
		out := llm.Message{Role: llm.RoleAssistant, Content: reply.Content} // reasoning is not sent back
		for _, c := range reply.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		// Per message, so the request's history is not copied to add one.
		u.Used = estimateTokens(req.Messages) + estimateTokens([]llm.Message{out})
		u.Meta = acp.Meta{UsageMetaKey: UsageMeta{Estimated: true}}
	}
	if su.costed {
		cur := prices.Currency
		if cur == "" {
			cur = "USD"
		}
		u.Cost = &acp.Cost{Amount: roundCost(su.cost), Currency: cur}
	}
	u.Size = windowOf(req.Model, configured)
	return u, su, u.Size > 0
}
