package acp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var propForm = Form{Title: "Provider", Fields: []FormField{
	{Name: "provider", Type: "string", MaxLength: 16, Options: []FormOption{{Value: "openai", Title: "OpenAI"}, {Value: "custom", Title: "Another"}}, Required: true},
	{Name: "baseUrl", Type: "string", MaxLength: 40},
	{Name: "apiKey", Type: "string", MaxLength: 24, Required: true},
	{Name: "remember", Type: "boolean"},
}}

// checkAccepted is what an accepted answer promises: only the form's
// fields, each of its type and within its bounds, the required ones
// present.
func checkAccepted(t *testing.T, form Form, a FormAnswer, raw string) {
	t.Helper()
	if a.Action != ElicitationAccept {
		if a.Values != nil {
			t.Errorf("%s: %s with values %v", raw, a.Action, a.Values)
		}
		return
	}
	for name, v := range a.Values {
		i := slices.IndexFunc(form.Fields, func(f FormField) bool { return f.Name == name })
		if i < 0 {
			t.Errorf("%s: accepted a value for %q, not a field", raw, name)
			continue
		}
		f := form.Fields[i]
		switch v := v.(type) {
		case bool:
			if f.Type != "boolean" {
				t.Errorf("%s: %s is a bool, the field a %s", raw, name, f.Type)
			}
		case string:
			if f.Type != "string" || utf8.RuneCountInString(v) > f.MaxLength {
				t.Errorf("%s: %s = %d characters, field %s of at most %d", raw, name, utf8.RuneCountInString(v), f.Type, f.MaxLength)
			}
			if len(f.Options) > 0 && !slices.ContainsFunc(f.Options, func(o FormOption) bool { return o.Value == v }) {
				t.Errorf("%s: %s is not an option", raw, name)
			}
		default:
			t.Errorf("%s: %s is a %T", raw, name, v)
		}
	}
	for _, f := range form.Fields {
		if _, ok := a.Values[f.Name]; f.Required && !ok {
			t.Errorf("%s: required %s missing", raw, f.Name)
		}
	}
}

// Property: answers made up at random (known and unknown fields, every
// JSON type, lengths about the bounds, options and not) are accepted only
// when they keep the form's promises, and no error repeats a value given
// (it may be a key).
func TestDecodeFormAnswer_Property(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"provider", "baseUrl", "apiKey", "remember", "model", "__proto__", ""}
	accepted := 0
	for i := range 5000 {
		secret := fmt.Sprintf("SECRET%08x", r.Uint32())
		value := func() any {
			switch r.IntN(7) {
			case 0:
				return []string{"openai", "custom", "OpenAI", "openai "}[r.IntN(4)]
			case 1:
				n := r.IntN(30)
				return secret + strings.Repeat("é", n)
			case 2:
				return r.IntN(2) == 0
			case 3:
				return r.Float64()
			case 4:
				return nil
			case 5:
				return []string{secret}
			}
			return map[string]any{"x": secret}
		}
		content := map[string]any{}
		if r.IntN(2) == 0 { // a valid answer, which what follows may spoil
			content["provider"], content["apiKey"] = "custom", secret
		}
		for range r.IntN(5) {
			content[names[r.IntN(len(names))]] = value()
		}
		msg := map[string]any{"action": []any{"accept", "accept", "accept", "decline", "cancel", "_other", 3, nil}[r.IntN(8)]}
		if r.IntN(10) > 0 {
			msg["content"] = content
		}
		b, _ := json.Marshal(msg)
		a, err := decodeFormAnswer(b, propForm)
		if err != nil {
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("case %d: the error repeats a value: %v", i, err)
			}
			continue
		}
		if a.Action == ElicitationAccept {
			accepted++
		}
		checkAccepted(t, propForm, a, string(b))
	}
	if accepted == 0 {
		t.Errorf("no random answer was accepted: the generator never made a valid one")
	}
}

// The form Rebound sends is refused before sending when it breaks the
// bounds: a string without MaxLength, a repeated name, an unknown type.
func TestForm_Check(t *testing.T) {
	if err := propForm.check(); err != nil {
		t.Fatalf("the test form: %v", err)
	}
	for name, f := range map[string]Form{
		"no fields":      {},
		"no maxLength":   {Fields: []FormField{{Name: "a", Type: "string"}}},
		"repeated name":  {Fields: []FormField{{Name: "a", Type: "boolean"}, {Name: "a", Type: "boolean"}}},
		"number":         {Fields: []FormField{{Name: "a", Type: "number"}}},
		"bool options":   {Fields: []FormField{{Name: "a", Type: "boolean", Options: []FormOption{{Value: "x", Title: "X"}}}}},
		"too many":       {Fields: slices.Repeat([]FormField{{Type: "boolean"}}, maxFormFields+1)},
		"huge maxLength": {Fields: []FormField{{Name: "a", Type: "string", MaxLength: maxFormString + 1}}},
	} {
		if f.check() == nil {
			t.Errorf("%s: check passes, want an error", name)
		}
	}
}

func FuzzFormAnswer(f *testing.F) {
	for _, s := range []string{
		`{"action":"accept","content":{"provider":"openai","apiKey":"sk-x"}}`,
		`{"action":"accept","content":{"provider":"custom","apiKey":"k","baseUrl":null,"remember":true}}`,
		`{"action":"decline"}`, `{"action":"cancel","content":{"x":1}}`, `{"action":"accept"}`, `null`, `[]`, `{"action":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := decodeFormAnswer(raw, propForm)
		if err == nil {
			checkAccepted(t, propForm, a, string(raw))
		}
	})
}
