package recovery

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rule is a user's recovery rule: failures it matches get its delay and its
// own retry budget instead of the default policy's.
type Rule struct {
	Match      string
	Delay      time.Duration
	MaxRetries int
	Action     Action // ActionNone (retry) or ActionStripImages
}

// Codes lists every failure code, in the documented order.
var Codes = []Code{RateLimit, Overloaded, Server, Timeout, Transport, EmptyResponse, ContextOverflow,
	Auth, Quota, InvalidRequest, Protocol, Aborted, Unknown}

// The forms of a match expression, compiled on first use rather than in
// every start of the binary (see BENCHMARKS.md, start-up).
var (
	statusMatch = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[1-5][0-9][0-9]$`) })
	fieldMatch  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*)=(.+)$`) })
)

// CheckMatch says what is wrong with a rule's match expression, or nil.
func CheckMatch(m string) error {
	_, err := compileMatch(m)
	return err
}

// compileMatch parses the four forms: an HTTP status, a failure code (any
// case), field=value on the provider's error JSON, msg~substring (any case).
func compileMatch(m string) (func(*Failure) bool, error) {
	switch {
	case strings.HasPrefix(m, "msg~"):
		sub := strings.ToLower(strings.TrimPrefix(m, "msg~"))
		if sub == "" {
			return nil, fmt.Errorf("msg~ needs a substring to look for")
		}
		// The one place message text is read: the user asked for it.
		return func(f *Failure) bool { return strings.Contains(strings.ToLower(f.Message), sub) }, nil
	case statusMatch().MatchString(m):
		status, _ := strconv.Atoi(m)
		return func(f *Failure) bool { return f.Status == status }, nil
	case fieldMatch().MatchString(m):
		sm := fieldMatch().FindStringSubmatch(m)
		field, value := sm[1], sm[2]
		return func(f *Failure) bool {
			v, ok := errorField(f.body, field)
			return ok && strings.EqualFold(v, value)
		}, nil
	case slices.Contains(Codes, Code(strings.ToUpper(m))):
		// A code names a kind of failure, and a rule for it says how to
		// wait for that kind to pass; a failure that cannot pass (a host
		// name that does not exist, a certificate that does not verify) is
		// not one it asked to retry. A rule on its message or fields, which
		// singles it out, still applies.
		code := Code(strings.ToUpper(m))
		return func(f *Failure) bool { return f.Code == code && !f.Permanent() }, nil
	}
	return nil, fmt.Errorf("match %q is none of: an HTTP status such as \"429\", a failure code (%s), field=value, msg~substring", m, KnownCodes())
}

// KnownCodes lists every failure code, comma-separated, for messages.
func KnownCodes() string {
	s := make([]string, len(Codes))
	for i, c := range Codes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// errorField reads field from body, the provider's error JSON: inside its
// "error" object first (OpenAI, Anthropic), then at the top level; a dotted
// field walks nested objects. Gemini's array of one error reads as that
// error.
func errorField(body []byte, field string) (string, bool) {
	if len(body) == 0 {
		return "", false
	}
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		var arr []map[string]any
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return "", false
		}
		doc = arr[0]
	}
	if inner, ok := doc["error"].(map[string]any); ok {
		if v, ok := lookup(inner, field); ok {
			return v, true
		}
	}
	return lookup(doc, field)
}

func lookup(obj map[string]any, path string) (string, bool) {
	var cur any = obj
	for part := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[part]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	case nil:
		return "", false
	}
	b, _ := json.Marshal(cur)
	return string(b), true
}
