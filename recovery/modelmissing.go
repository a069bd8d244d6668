package recovery

import (
	"regexp"
	"strings"
	"sync"
)

// A model the provider does not have is an invalid request (404 or 400) like
// any other, and providers word it in their own ways: OpenAI's code
// model_not_found and "The model `x` does not exist or you do not have
// access to it", Ollama's "model \"x\" not found, try pulling it first",
// DeepSeek's "Model Not Exist", Mistral's "Invalid model: x", OpenRouter's
// "x is not a valid model ID", LiteLLM's "Invalid model name passed in
// model=x", Gemini's "models/x is not found", Together's "Unable to access
// model x", Azure's DeploymentNotFound. ModelNotFound reads them, so the
// give-up can say where the name was set and which names the provider has.

// modelToken stands for the model's own name in a message: names hold
// colons, dots and slashes that the normaliser reads as clause breaks.
const modelToken = " thismodelname "

var modelMissingWords = sync.OnceValue(func() *regexp.Regexp {
	missing := `(?:not found|not exist|does not exist|do not exist|doesnt exist|dont exist|did not exist|could not be found|cannot be found|can not be found|not available|unavailable|not supported|unsupported|unknown|invalid|not recognized|not recognised|not valid)`
	return regexp.MustCompile(strings.Join([]string{
		`\b(?:models?|deployments?|deployment id)(?: [a-z0-9]+){0,3} (?:(?:is|was|has been|are) )?` + missing + `\b`,
		`\b(?:unknown|invalid|unsupported|unrecognized|unrecognised|nonexistent|non existent|no such|no|missing|not a valid) (?:model|deployment)(?: name| id| identifier)?\b`,
		`\bunable to (?:access|find|load) (?:the )?model\b`,
		`\bno endpoints found for thismodelname\b`,
		`\bthismodelname (?:(?:is|was) )?(?:not found|does not exist|not a valid|is not available|unknown)\b`,
	}, "|"))
})

// quoted is a name in quotes or backticks, without spaces in single ones
// (an apostrophe is not a quote).
var quoted = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\"[^\"]{1,200}\"|`[^`]{1,200}`|'[^'\\s]{1,200}'")
})

// ModelNotFound reports whether f is the provider saying it has no model
// named model (the name the failed request asked for): an invalid request,
// not a content filter or a web page, whose code, type or message says so.
func (f *Failure) ModelNotFound(model string) bool {
	if f == nil || f.Code != InvalidRequest || f.ContentFilter || f.page {
		return false
	}
	texts := []string{f.ProviderCode, f.ProviderType, f.Message}
	for i, t := range texts {
		if len(t) > maxWordsText {
			t = t[:maxWordsText]
		}
		if len(model) >= 2 {
			t = replaceFold(t, model, modelToken)
		}
		// A quoted name (of another model than asked: an alias, a
		// default) is one word too.
		texts[i] = normalise(quoted().ReplaceAllString(t, " quotedname "))
	}
	for _, t := range texts {
		if modelMissingWords().MatchString(t) {
			return true
		}
	}
	// A not-found (the status, or the code or type) whose message names
	// the model: "model: x" with type not_found_error (Anthropic). A wrong
	// path answers with a page, or names no model.
	notFound := f.Status == 404 || strings.Contains(texts[0], " not found ") || strings.Contains(texts[1], " not found ")
	return notFound && len(model) >= 2 && strings.Contains(texts[2], strings.TrimSpace(modelToken))
}

// replaceFold replaces every occurrence of old in s, ignoring ASCII case.
func replaceFold(s, old, repl string) string {
	ls, lo := strings.ToLower(s), strings.ToLower(old)
	if len(ls) != len(s) || !strings.Contains(ls, lo) { // lowering changed the length: leave it
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(ls, lo)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(repl)
		s, ls = s[i+len(lo):], ls[i+len(lo):]
	}
}
