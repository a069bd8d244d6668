package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// contentPart is one of Mistral's typed content chunks. Its reasoning models
// (Magistral, and others with reasoning_effort) stream delta.content as
// [{"type":"thinking","thinking":[{"type":"text","text":…}]},
// {"type":"text","text":…}] instead of a string
// (docs.mistral.ai/capabilities/reasoning).
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking json.RawMessage `json:"thinking"`
}

// contentParts reads delta.content: a string is text; Mistral's typed parts
// give text (type text) and thoughts (type thinking). Parts of other types
// (a reference, say) carry no text to show and are skipped.
func contentParts(raw json.RawMessage) (text, thought string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	if raw[0] == '"' {
		err = json.Unmarshal(raw, &text)
		return text, "", err
	}
	if raw[0] != '[' {
		return "", "", fmt.Errorf("content is neither a string nor a list of parts")
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", "", err
	}
	var tb, rb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			tb.WriteString(p.Text)
		case "thinking":
			t, _, err := contentParts(p.Thinking) // itself a list of text parts (or a string)
			if err != nil {
				return "", "", fmt.Errorf("thinking part: %w", err)
			}
			rb.WriteString(t)
		}
	}
	return tb.String(), rb.String(), nil
}
