package llm

import (
	"net/url"
	"strings"
	"unicode"
)

// Continuation is how a provider is asked to go on with a reply that was
// cut off (provider.continuation).
type Continuation string

const (
	// ContinueAuto continues in place for the providers in PrefixDialects,
	// with a prompt elsewhere.
	ContinueAuto Continuation = "auto"
	// ContinuePrefix continues in place whatever the base URL: the partial
	// reply is the last message, marked "prefix": true.
	ContinuePrefix Continuation = "prefix"
	// ContinuePrompt always sends the partial reply followed by a user
	// message asking for the rest (the agent's continue prompt).
	ContinuePrompt Continuation = "prompt"
)

// PrefixDialect is a provider known to continue an assistant message in
// place: a request whose last message is the assistant's, with
// "prefix": true, is answered with the rest of that message.
type PrefixDialect struct {
	ID       string // stable name, for the log and the docs
	Provider string // who, for people
	Host     string // the base URL's host
	// Path the base URL's path must start with; "" is any. DeepSeek only
	// accepts prefix on its beta endpoint.
	Path string
	// Echoes: the reply starts with the prefix itself before going on
	// (Mistral's does), so the adapter drops that repeat.
	Echoes bool
	// MayEcho: whether the reply starts with the prefix is not known; a
	// whole repeat of it is dropped only when CertainRepeat says so.
	MayEcho bool
	Source  string // where the request shape is documented
}

// PrefixDialects are the providers continued in place under
// ContinueAuto. docs/providers.md lists them.
var PrefixDialects = []PrefixDialect{
	{ID: "deepseek.prefix", Provider: "DeepSeek (beta endpoint)", Host: "api.deepseek.com", Path: "/beta",
		Source: "api-docs.deepseek.com, Chat Prefix Completion (Beta)"},
	{ID: "mistral.prefix", Provider: "Mistral", Host: "api.mistral.ai", Echoes: true,
		Source: "docs.mistral.ai, Prefix (guides/prefix) and the chat completion API's AssistantMessage.prefix"},
}

// anyPrefix is the dialect of a provider continued in place only because
// the configuration says so: whether it repeats the prefix is unknown (a
// gateway in front of Mistral would), so an exact repeat of the whole
// prefix is dropped only when it is certainly one (CertainRepeat): a short
// prefix the reply merely starts with, by coincidence, is the reply.
var anyPrefix = PrefixDialect{ID: "configured.prefix", Provider: "provider.continuation = \"prefix\"", MayEcho: true}

// prefixDialect returns how a provider at baseURL is continued in place
// under mode, or nil when it is continued with a prompt.
func prefixDialect(baseURL string, mode Continuation) *PrefixDialect {
	if mode == ContinuePrompt {
		return nil
	}
	if u, err := url.Parse(baseURL); err == nil {
		host := strings.ToLower(u.Hostname())
		for i, d := range PrefixDialects {
			if host == d.Host && strings.HasPrefix(u.Path, d.Path) {
				return &PrefixDialects[i]
			}
		}
	}
	if mode == ContinuePrefix {
		return &anyPrefix
	}
	return nil
}

// Continuer is a Provider that can continue a partial assistant reply in
// place (see Message.Prefix).
type Continuer interface {
	ContinuesInPlace() bool
}

// ContinuesInPlace reports whether p continues a partial reply in place,
// so a continuation needs no prompt.
func ContinuesInPlace(p Provider) bool {
	c, ok := p.(Continuer)
	return ok && c.ContinuesInPlace()
}

// MinRestart is the fewest runes the whole shown text (from the reply's
// first character) must hold for a continuation that begins with all of it
// to count as starting over (CertainRestart).
const MinRestart = 12

// CertainRestart reports whether s, which is the beginning of the shown
// reply (all of it, or as much of it as a continuation sent before it
// ended) and also the beginning of the continuation, is certainly the
// model starting its reply over. The match is anchored at the reply's
// first character, not only at the cut, which is much stronger evidence
// than a passage that merely ends the shown text: genuine text does not
// begin again with its own opening words. It still can with a closing
// token or a run ("}", "</div>", "===="), so a restart is certain when it
// is certain as a repeat (CertainRepeat), or when it holds at least
// MinRestart runes, no unit shorter than MinRestart repeats through it,
// and it has at least two words (runs of two or more letters): "The magic
// word" starting over is trimmed, a reply that so far is "}\n}\n" or
// "</div>" is not.
func CertainRestart(s string) bool {
	if CertainRepeat(s) {
		return true
	}
	rs := []rune(s)
	if len(rs) < MinRestart {
		return false
	}
	for q := 1; q < MinRestart; q++ {
		if string(rs[q:]) == string(rs[:len(rs)-q]) {
			return false
		}
	}
	words, run := 0, 0
	for _, c := range rs {
		if unicode.IsLetter(c) {
			run++
			if run == 2 {
				words++
			}
			continue
		}
		run = 0
	}
	return words >= 2
}

// MinRepeat is the fewest runes a passage must hold, without repeating a
// shorter unit of itself, for its second occurrence at the start of a
// continuation to count as a repeat (CertainRepeat).
const MinRepeat = 24

// CertainRepeat reports whether r, which both ends the text already shown
// and starts what a continuation sent next, is certainly the continuation
// repeating that text, rather than the text going on as written.
//
// Nothing in the bytes says which it is: the two readings differ only in
// whether r belongs in the reply twice. So the rule weighs how likely a
// genuine reply is to contain r twice in a row at that point. Genuine text
// does that all the time with short passages: closing tokens (`}`,
// `</div>`, `end`), a word, a blank line; and with runs of a short unit of
// any length (a rule of "=", a row of "0 0 0", closing tags at one
// indentation, one short line again and again). It almost never repeats,
// back to back, a longer passage that is not such a run, and that is what
// a model asked to go on does when it repeats the last sentence or line, or
// starts over. Hence: r is a repeat only when it holds at least MinRepeat
// runes and its smallest period is at least MinRepeat runes (no shorter
// unit of r repeats through all of it). Anything else is kept: a short
// repeat shown twice is visible and harmless; text trimmed as a repeat is
// lost from the reply, the editor and the model's history, and in code it
// is a closing brace.
//
// The rule is no licence where a repeat cannot happen: a reply continued in
// place (prefix: true) is never trimmed, beyond the documented echo of the
// whole prefix by a provider that sends one.
func CertainRepeat(r string) bool {
	k := 0 // runes of r before byte i
	for i := range r {
		if k == MinRepeat {
			return true
		}
		// A period of valid UTF-8 is a rune boundary (r[i] equals r[0], a
		// leading byte), so the runes' offsets are every period to test.
		if k > 0 && r[i:] == r[:len(r)-i] {
			return false
		}
		k++
	}
	return k >= MinRepeat
}
