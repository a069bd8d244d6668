package recovery

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/llm"
)

// Word classes: what a provider says in words when no code of the dialect
// table says it. Providers and gateways Rebound has never heard of word
// the same few failures alike: the input is too long for the model, the
// account is out of money, the content was refused. A class is a handful
// of patterns over normalised text (lower case, camelCase split,
// underscores and hyphens as spaces, punctuation as clause breaks), so
// "ContextWindowExceededError", "context_window_exceeded" and "Context
// window exceeded." read alike; a pattern never reaches across a clause.
//
// Classification asks, in order: the user's rules (before any policy, see
// Executor.decide), the structured facts (the HTTP status), the dialect
// table, then the word classes, read in the error's code and type first,
// then its message, then a gateway's forwarded upstream text. Where they
// were found is recorded in the facts (recognisedBy).
//
// Guards keep a class from misfiring:
//   - a class changes only what a status leaves open: any class on a 4xx
//     that is otherwise an invalid request (400, 404, 409, 413, 422, …) and
//     on an error without a status (inside a stream); quota on a 429 (out
//     of money beats the rate-limit default) and quota or moderation on a
//     403 (beats the key default). A 401, 402, 408 keeps its meaning.
//   - on a 5xx only a code or type may say it: a server's message is not
//     enough to turn a retryable failure into one that fails at once.
//   - quota and overflow words do not count in an error that also speaks
//     of a rate ("rate limit", "per minute", TPM, throttling): that is a
//     rate limit whose message mentions tokens or quota. Quota words on a
//     429 do not count when the provider said when to come back
//     (explicitWait), but reset headers, which come with every answer, do
//     not say so.

// class is one word class.
type class struct {
	name string
	code Code
	// contentFilter: the class is a moderation refusal.
	contentFilter bool
	patterns      func() *regexp.Regexp
}

// The patterns, compiled on first use (see BENCHMARKS.md, start-up). They
// run on normalise's output: lower-case words separated by one space, a
// clause break written " | ".
var (
	quotaWords = sync.OnceValue(func() *regexp.Regexp {
		money := `(?:account |credit |prepaid |token )?(?:quota|quotas|budget|budgets|credit|credits|balance|billing(?: hard limit)?|hard limit|funds?|spend(?:ing)? limit|spend cap|prepaid|free tier|resource package|usage limit|(?:free |daily |monthly )*(?:allocation|allowance))`
		return regexp.MustCompile(strings.Join([]string{
			`\b(?:exceeded|exceeds|exceed|exhausted|insufficient|not enough|ran out of|run out of|out of|used up|used all(?: available)?|depleted)(?: [a-z0-9]+){0,3} ` + money + `\b`,
			`\bno (?:more |remaining |available )` + money + `\b|\b(?:have|has) no ` + money + `\b|\bno ` + money + ` (?:left|remaining|available)\b`,
			`\b` + money + `(?: [a-z0-9]+){0,3} (?:exceeded|exhausted|depleted|insufficient|used up|too low|is low|has run out|ran out|is empty|is zero|is negative|expired|not active|inactive|overdue|reached)\b`,
			`\b(?:arrears|arrearage|in arrear|overdue (?:payment|account|balance|bill)|account (?:is )?overdue|payment required|insufficient funds|recharge|top up|purchase more credits|add (?:more )?credits|unpaid (?:invoices?|bills?|balance))\b`,
			`\bbilling (?:is )?(?:not enabled|disabled|not active|inactive)\b|\brequires billing\b`,
			`欠费|余额不足|余额已用完|额度(?:不足|已用完|用尽)|充值|资源包`,
		}, "|"))
	})
	moderationWords = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(strings.Join([]string{
			`\bcontent (?:filter|filtered|filtering|moderation|policy|policies|management policy|safety|security|inspection|violation|risk|exists risk|blocked|flagged)\b`,
			`\b(?:data|input|output|content) inspection\b`,
			`\b(?:inappropriate|sensitive|unsafe|harmful|prohibited|disallowed|illegal|objectionable|offensive|nsfw|violent|risky) (?:content|words?|material|information|text|input|output|data|prompt|request|image)\b`,
			`\b(?:input|prompt|content|output|response|image|text|message|request) (?:(?:was|were|has been|have been|is|got) )?(?:flagged|censored)\b`,
			`\b(?:input|prompt|content|output|response|image|text|message|request) (?:was|were|has been|have been|is|got) blocked\b`,
			`\bflagged (?:by|for|as) (?:the |our )?(?:moderation|safety|content|policy|inappropriate|harmful|unsafe)`,
			`\b(?:blocked|filtered|refused|rejected) (?:due to|because of|for|by) (?:the |our )?(?:safety|moderation|content policy|content filter|sensitive|policy)`,
			`\bsafety (?:system|filter|filters|policy|policies|guidelines|reasons?|check|checks|violation)\b`,
			`\bviolat(?:e|es|ed|ing|ion|ions) (?:of )?(?:our |the |its |their |[a-z]+ s )?(?:usage |content |safety |acceptable use |community |moderation |guardrail )?(?:polic(?:y|ies)|guidelines|terms of (?:service|use))\b`,
			`\bpolicy violation\b`,
			`\b(?:requires?|failed|triggered|by) moderation\b|\bmoderation (?:blocked|failed|flagged|check|system)\b`,
			`\b(?:high|exists) risk\b|\brisk control\b`,
			`\b(?:input|output) new sensitive\b|\b(?:content|image|input|output|text|prompt)(?: [0-9]+)? is sensitive\b`,
			`敏感(?:内容|词|信息)|涉敏|不安全(?:或敏感)?内容|内容安全|违规内容|审核(?:未通过|不通过)`,
		}, "|"))
	})
	overflowWords = sync.OnceValue(func() *regexp.Regexp {
		over := `(?:too long|too large|too big|too many tokens|exceeds?|exceeded|exceeding|overflows?|overflowed|longer than|larger than|greater than|more than|beyond)`
		limit := `(?:context(?: length| size| window| limit)?|tokens? limit|input limit|model length|maximum number of (?:input |prompt )?tokens|max total tokens)`
		return regexp.MustCompile(strings.Join([]string{
			`\b(?:input|inputs|prompt|context|conversation)(?: (?:text|data|length|size|window|tokens?|token count|token length))? (?:is |are |was |has |have )?` + over + `\b`,
			`\b` + over + ` (?:the |this |your |its )?(?:models? |model s )?(?:maximum |max |allowed |available |configured |current |model )*` + limit + `\b`,
			`\b(?:models?|model s|endpoints?|endpoint s|this|[0-9]+) (?:maximum|max) (?:context|prompt|input) (?:length|size|window)\b|\b(?:maximum|max) (?:context|prompt|input) (?:length|size|window) (?:is|of)\b`,
			`\btoo (?:long|large|big) for (?:the |this )?model\b`,
			`\b(?:tokens?|context|input|prompt)(?: window| length| size)? limit (?:reached|exceeded|hit)\b`,
			`\b(?:context|token|tokens)(?: length| window| size)? (?:exceeded|exceeds|overflow)\b`,
			`\btoo many (?:input |prompt |context )?tokens\b`,
			`\bcontext(?: the| window| length)? overflows?\b`,
			`\binputs? tokens? max (?:new|total) tokens must be\b|\binputs? must have (?:less|fewer) than [0-9]+ tokens\b|\bmax total tokens (?:is |was |has been )?(?:exceeded|reached)\b`,
			`\brange of input length\b`,
			`\breduce the length of (?:the |your )?(?:messages|prompt|input|conversation)\b|\bcurrent length is [0-9]+ while limit is\b`,
			`\bmodel max(?:imum)? length exceeded\b`,
			`(?:上下文|输入|提示词?|prompt)[^|]{0,6}(?:超长|过长|超过|超出)|超过(?:了)?(?:模型)?(?:最大)?(?:上下文|长度)`,
		}, "|"))
	})
	// rateWords: an error that speaks of a rate is a rate limit, whatever
	// else it mentions.
	rateWords = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\brate ?limit|\bratelimit|\bper (?:minute|min|second|sec|hour|day)\b|\b(?:tpm|rpm|tpd|rpd|tps|rps)\b|\btokens per\b|\brequests per\b|\btoo many requests\b|\bthrottl|频率|限流`)
	})
	// outputWords and inputWords: an error about the output budget alone
	// (max_tokens too large) is an invalid request, not an overflow that
	// compacting the conversation would cure.
	outputWords = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:max (?:completion |output |new )?tokens|completion tokens|output tokens|max completion)\b`)
	})
	inputWords = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:input|inputs|prompt|context|messages|conversation)\b|上下文|输入`)
	})
)

// The classes in the order they are tried on each text: a refusal may
// mention money ("no credits were charged") and an empty account never
// mentions moderation; overflow words are the broadest.
var (
	quotaClass      = class{name: "quota", code: Quota, patterns: quotaWords}
	moderationClass = class{name: "moderation", code: InvalidRequest, contentFilter: true, patterns: moderationWords}
	overflowClass   = class{name: "overflow", code: ContextOverflow, patterns: overflowWords}
	classes         = []*class{&moderationClass, &quotaClass, &overflowClass}
)

// maxWordsText bounds how much of one text the classes read: providers'
// sentences are short; a bigger text is a page or a dump.
const maxWordsText = 4 << 10

// normalise makes text comparable: lower case, camelCase, acronyms and
// numbers split into words ("ContextWindowExceededError" → "context
// window exceeded error"), an apostrophe dropped ("model's" → "models"),
// clause punctuation written " | ", everything else a single space. CJK
// text is kept as it is.
func normalise(s string) string {
	if len(s) > maxWordsText {
		s = s[:maxWordsText]
	}
	var n normaliser
	n.b.Grow(len(s) + 8)
	n.b.WriteByte(' ')
	n.space = true
	var prev rune
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == utf8.RuneError:
			n.wordBreak()
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			next := rune(0)
			if i+1 < len(rs) {
				next = rs[i+1]
			}
			if joinedWords(prev, r, next) {
				n.wordBreak()
			}
			n.b.WriteRune(unicode.ToLower(r))
			n.space = false
		case r == '\'' || r == '’':
			// model's → models: keeps the word whole
		case strings.ContainsRune(clauseBreaks, r):
			n.clauseBreak()
		default:
			n.wordBreak()
		}
		prev = r
	}
	n.wordBreak()
	return n.b.String()
}

// clauseBreaks are the punctuation normalise writes " | ".
const clauseBreaks = ".,;:!?()[]{}|\n\r，。；：！？（）【】、"

// normaliser is normalise's output: space says the last byte written is a
// separator, so that separators never repeat.
type normaliser struct {
	b     strings.Builder
	space bool
}

// wordBreak separates words with one space.
func (n *normaliser) wordBreak() {
	if !n.space {
		n.b.WriteByte(' ')
		n.space = true
	}
}

// clauseBreak separates clauses with " | ", once however many breaks follow.
func (n *normaliser) clauseBreak() {
	if !strings.HasSuffix(n.b.String(), "| ") {
		n.wordBreak()
		n.b.WriteString("| ")
	}
	n.space = true
}

// joinedWords reports whether letter or digit r starts a new word after
// prev (0 at the start), with next the rune after r (0 at the end).
func joinedWords(prev, r, next rune) bool {
	return digitsJoined(prev, r) || caseJoined(prev, r, next)
}

// digitsJoined: Is4096Tokens → is 4096 tokens. ASCII only: CJK text and
// its numbers are kept as they are.
func digitsJoined(prev, r rune) bool {
	if prev >= unicode.MaxASCII || r >= unicode.MaxASCII || !(unicode.IsLetter(prev) || unicode.IsDigit(prev)) {
		return false
	}
	return unicode.IsDigit(r) != unicode.IsDigit(prev)
}

// caseJoined: fooBar → foo bar; HTTPError → http error.
func caseJoined(prev, r, next rune) bool {
	return unicode.IsUpper(r) && (unicode.IsLower(prev) || (unicode.IsUpper(prev) && unicode.IsLower(next)))
}

// wordText is one text of a provider's error, and where it was found.
type wordText struct {
	where string // code, type, words (the message) or upstream
	text  string // normalised
}

// structured reports a text that is a code or type, not a sentence.
func (t wordText) structured() bool { return t.where == "code" || t.where == "type" }

// eligible says whether class c may reclassify an error of status st (0
// when it has none) from a text of kind t. See the guards above.
func eligible(st int, c *class, t wordText) bool {
	switch {
	case st == 0:
		return true
	case st >= 500:
		return t.structured()
	case st == 401 || st == 402 || st == 408:
		return false
	case st == 429:
		return c == &quotaClass
	case st == 403:
		return c == &quotaClass || c == &moderationClass
	case st >= 400:
		return true
	}
	return false
}

// recognise reads the word classes in e's texts: the code and content
// filter of the first class found, and where ("code:overflow",
// "words:quota", "upstream:moderation"), or "" when none applies.
func recognise(e *llm.Error, st int, up upstream, now time.Time) (Code, bool, string) {
	texts := providerTexts(e, up)
	rate, hinted := false, false
	for _, t := range texts {
		rate = rate || speaksOfRate(t.text)
	}
	if st == 429 {
		hinted = explicitWait(e, now)
	}
	for _, t := range texts {
		for _, c := range classes {
			if !eligible(st, c, t) || (c == &quotaClass && hinted) {
				continue
			}
			if c.reads(t.text, rate) {
				return c.code, c.contentFilter, t.where + ":" + c.name
			}
		}
	}
	return "", false, ""
}

// speaksOfRate reports whether normalised text n speaks of a rate. An
// exception's class name is a gateway's mapping of the status, not the
// provider's words: LiteLLM calls every 429 a RateLimitError, out of money
// or not.
func speaksOfRate(n string) bool {
	return rateWords().MatchString(strings.ReplaceAll(n, " rate limit error ", " "))
}

// explicitWait reports whether the provider said when to come back about
// this refusal: a Retry-After header, a retry field of its body, or words
// ("try again in 20s"). Reset headers and reset fields do not count: they
// describe rate buckets and come with every answer, out of money or not.
func explicitWait(e *llm.Error, now time.Time) bool {
	if _, _, ok, _ := retryAfter(e.Header, now); ok {
		return true
	}
	b := readHints(e.Body, e.Message, now)
	if _, ok := first(b.retry); ok {
		return true
	}
	if _, ok := phraseHint(e.Message, now); ok {
		return true
	}
	_, ok := first(b.words)
	return ok
}

// reads reports whether c's words are in n, a normalised text of an error
// that speaks of a rate when rate is set.
func (c *class) reads(n string, rate bool) bool {
	switch c {
	case &quotaClass:
		if rate {
			return false
		}
	case &overflowClass:
		if rate || (outputWords().MatchString(n) && !inputWords().MatchString(n)) {
			return false
		}
	}
	return c.patterns().MatchString(n)
}

// messageKeys are the fields of an error body that hold the provider's
// words, at any depth; codeKeys hold its codes. Other fields (param, the
// request echoed back, flagged input) are the user's words or ours and
// are never read.
var (
	messageKeys = map[string]bool{"message": true, "msg": true, "detail": true, "details": true, "error": true,
		"error_msg": true, "errmsg": true, "error_message": true, "reason": true, "description": true, "status_msg": true}
	codeKeys = map[string]bool{"code": true, "type": true, "error_type": true, "status": true, "error_code": true}
)

// maxWordsDepth bounds how deep into an error body texts are looked for.
const maxWordsDepth = 6

// providerTexts lists e's texts in the order the classes read them: its
// code and type, its message and the other message fields of its body,
// then a gateway's upstream text. A web page's or an empty body's message
// is Rebound's own and is not read.
func providerTexts(e *llm.Error, up upstream) []wordText {
	var out []wordText
	seen := map[string]bool{}
	add := func(where, s string) {
		s = strings.TrimSpace(s)
		if s == "" || seen[where+"\x00"+s] {
			return
		}
		seen[where+"\x00"+s] = true
		out = append(out, wordText{where: where, text: normalise(s)})
	}
	add("code", e.Code)
	add("type", e.Type)
	if len(e.Body) > 0 || e.InStream {
		add("words", e.Message)
	}
	var doc any
	if json.Unmarshal(e.Body, &doc) == nil {
		walkTexts(doc, 0, func(key, s string) {
			if codeKeys[key] {
				add("code", s)
			} else {
				add("words", s)
			}
		})
	}
	for _, s := range up.texts {
		add("upstream", s)
	}
	return out
}

// walkTexts calls fn with every string under a message or code key of v,
// to maxWordsDepth. A gateway's metadata.raw is no such key: it is read as
// upstream.
func walkTexts(v any, depth int, fn func(key, s string)) {
	if depth > maxWordsDepth {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			k = strings.ToLower(k)
			if s, ok := x.(string); ok {
				if messageKeys[k] || codeKeys[k] {
					fn(k, s)
				}
				continue
			}
			if messageKeys[k] || k == "errors" || k == "base_resp" {
				walkTexts(x, depth+1, fn)
			}
		}
	case []any:
		for _, x := range v {
			walkTexts(x, depth+1, fn)
		}
	}
}

// upstream is what a gateway forwarded of the provider behind it:
// OpenRouter's error.metadata.raw (the upstream's body, as text) and
// error.metadata.provider_name.
type upstream struct {
	provider string   // cleaned, bounded
	reason   string   // the upstream's message, cleaned and bounded, for people
	texts    []string // what the word classes read
}

// maxUpstream bounds the upstream reason shown in a message and the
// provider name.
const (
	maxUpstream         = 300
	maxUpstreamProvider = 60
)

// upstreamOf reads a gateway's forwarded upstream error from body.
func upstreamOf(body []byte) upstream {
	var doc struct {
		Error struct {
			Metadata struct {
				Raw          json.RawMessage `json:"raw"`
				ProviderName string          `json:"provider_name"`
			} `json:"metadata"`
		} `json:"error"`
	}
	if len(body) == 0 || json.Unmarshal(body, &doc) != nil {
		return upstream{}
	}
	m := doc.Error.Metadata
	var up upstream
	up.provider = clean(m.ProviderName, maxUpstreamProvider)
	raw := m.Raw
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s) // the upstream's body, as text
	}
	if code, typ, msg, ok := llm.ParseErrorBody(raw); ok {
		up.texts = []string{code, typ, msg}
		up.reason = clean(cmpOr(msg, typ, code), maxUpstream)
	} else if s != "" {
		up.texts = []string{s}
		up.reason = clean(s, maxUpstream)
	}
	return up
}

func cmpOr(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// secretLike matches what looks like a credential in a forwarded text: an
// upstream may echo its own key, which is not ours to redact by value.
var secretLike = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bbearer\s+\S+|\b(?:sk|pk|rk|gsk|xai|ak|key)[-_][A-Za-z0-9_\-]{8,}|\bAIza[0-9A-Za-z_\-]{20,}`)
})

// clean makes a provider's text fit for a one-line message: control
// characters removed, white space collapsed, credentials masked, at most
// max runes.
func clean(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	s = secretLike().ReplaceAllString(s, "[redacted]")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// withUpstream is the provider's message with the upstream's reason, when
// the gateway forwarded one the message does not already say:
// "Provider returned error (Google: Resource exhausted …)".
func withUpstream(msg string, up upstream) string {
	if up.reason == "" || strings.Contains(msg, up.reason) {
		return msg
	}
	who := up.provider
	if who == "" {
		who = "upstream"
	}
	return strings.TrimSpace(msg + " (" + who + ": " + up.reason + ")")
}
