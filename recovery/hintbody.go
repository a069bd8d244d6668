package recovery

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The error body. Besides the message, providers put a wait in fields of
// their own (OpenRouter's error.metadata.retry_after_seconds, Gemini's
// RetryInfo), and gateways forward the upstream's headers in it (OpenRouter's
// error.metadata.headers) or its whole error as text (error.metadata.raw).

// bodyHints are the waits found in an error body, by kind.
type bodyHints struct {
	retry  []hint // retry fields and forwarded Retry-After headers
	words  []hint // words in the body's texts other than the message
	resets []hint // forwarded reset headers and reset fields of exhausted limits
}

const (
	maxBodyDepth  = 12
	maxBodyNodes  = 4096
	maxEmbedded   = 2 // JSON in a string in JSON (metadata.raw), at most this deep
	maxEmbedBytes = 16 << 10
)

// retryKeys are the retry fields, by name with case, '_' and '-' dropped;
// true when the value is in milliseconds.
var retryKeys = map[string]bool{
	"retryafter": false, "retryafterseconds": false, "retryaftersecs": false,
	"retryafterms": true, "retryaftermillis": true, "retryaftermilliseconds": true,
	"retrydelay": false, "retrydelayseconds": false, "retrydelayms": true,
	"retryin": false, "retryinseconds": false, "retryinms": true,
}

var resetKeyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^x?(?:ratelimit)?resets?(?:at|in|after|time)?(ms|millis|milliseconds|s|secs|seconds)?$`)
})

func normKey(k string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(k))
}

// readHints walks the JSON of an error body (a body that is not JSON is
// only read for words) within fixed bounds, and collects its waits.
func readHints(body []byte, message string, now time.Time) bodyHints {
	var b bodyHints
	if len(body) == 0 {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var root any
	if dec.Decode(&root) != nil {
		if d, ok := phraseHint(string(body), now); ok {
			b.words = append(b.words, hint{d: d, source: SourceBody})
		}
		return b
	}
	w := bodyWalk{bodyHints: &b, nodes: maxBodyNodes, message: message, now: now}
	w.walk(root, "", 0, 0)
	return b
}

// bodyWalk is one walk of an error body, collecting into its bodyHints.
type bodyWalk struct {
	*bodyHints
	nodes   int    // left to visit, of maxBodyNodes
	message string // the error's message, read for words elsewhere
	now     time.Time
}

// walk reads v, at path, depth levels down and inside embedded levels of
// JSON in a string.
func (w *bodyWalk) walk(v any, path string, depth, embedded int) {
	if depth > maxBodyDepth || w.nodes <= 0 {
		return
	}
	w.nodes--
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			w.walk(x, path, depth+1, embedded)
		}
	case map[string]any:
		w.object(t, path, depth, embedded)
	case string:
		if inner, ok := embeddedJSON(t, embedded); ok {
			w.walk(inner, path, depth+1, embedded+1)
			return
		}
		w.text(t, path, depth)
	}
}

// object reads each field of obj, in the order of its keys, and walks its
// value.
func (w *bodyWalk) object(obj map[string]any, path string, depth, embedded int) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		p := k
		if path != "" {
			p = path + "." + k
		}
		w.field(obj, k, p, depth, w.now)
		w.walk(obj[k], p, depth+1, embedded)
	}
}

// embeddedJSON is the JSON a string of the body holds (a gateway's
// metadata.raw), while the string is found within embedded levels fewer
// than maxEmbedded and is small enough to read.
func embeddedJSON(s string, embedded int) (any, bool) {
	s = strings.TrimSpace(s)
	if embedded >= maxEmbedded || len(s) > maxEmbedBytes || !strings.HasPrefix(s, "{") && !strings.HasPrefix(s, "[") {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var inner any
	if dec.Decode(&inner) != nil {
		return nil, false
	}
	return inner, true
}

// text reads a string of the body for words of a wait; not the message,
// whose words count on their own.
func (w *bodyWalk) text(s, path string, depth int) {
	if path == "" || s == w.message {
		return
	}
	if d, ok := phraseHint(s, w.now); ok {
		w.words = append(w.words, hint{d: d, source: path, depth: depth})
	}
}

// field reads the field k of obj (at path p) for a wait.
func (b *bodyHints) field(obj map[string]any, k, p string, depth int, now time.Time) {
	v := obj[k]
	nk := normKey(k)
	if millis, ok := retryKeys[nk]; ok {
		if d, ok := parseWait(scalar(v), millis, now); ok {
			source := p
			if typ, _ := obj["@type"].(string); nk == "retrydelay" && strings.HasSuffix(typ, "google.rpc.RetryInfo") {
				source = strings.TrimSuffix(p, k) + "RetryInfo." + k // error.details.RetryInfo.retryDelay
			}
			b.retry = append(b.retry, hint{d: d, source: source, depth: depth, coarse: !millis})
		}
		return
	}
	if m := resetKeyRE().FindStringSubmatch(nk); m != nil {
		if left, ok := parseCount(scalar(siblingRemaining(obj))); ok && left > 0 {
			return
		}
		millis := strings.HasPrefix(m[1], "m")
		if d, ok := parseWait(scalar(v), millis, now); ok {
			b.resets = append(b.resets, hint{d: d, source: p, depth: depth})
		}
		return
	}
	if nk == "headers" {
		if fwd, ok := v.(map[string]any); ok {
			b.forwarded(fwd, p+".", depth, now)
		}
	}
}

// forwarded reads the headers a gateway copied into the body.
func (b *bodyHints) forwarded(fwd map[string]any, prefix string, depth int, now time.Time) {
	h := http.Header{}
	names := map[string]string{} // lower case → as written
	for _, k := range slices.Sorted(maps.Keys(fwd)) {
		lower := strings.ToLower(k)
		if v := scalar(fwd[k]); v != "" && names[lower] == "" {
			h.Set(lower, v)
			names[lower] = k
		}
	}
	if d, src, ok, _ := retryAfter(h, now); ok {
		b.retry = append(b.retry, hint{d: d, source: prefix + names[src], depth: depth + 1, coarse: src == SourceRetryAfter})
	}
	b.resets = append(b.resets, headerResets(h, prefix, names, now)...)
}

// siblingRemaining is the remaining count beside a reset field, if any.
func siblingRemaining(obj map[string]any) any {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch normKey(k) {
		case "remaining", "ratelimitremaining", "xratelimitremaining":
			return obj[k]
		}
	}
	return nil
}

// scalar is a JSON string or number as text; "" for anything else.
func scalar(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	}
	return ""
}
