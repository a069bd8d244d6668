package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"
)

// Elicitation (stable ACP v1, in the 2.4.0 SDK's schema): the agent asks
// the user for structured input through the client. Rebound uses form mode
// only, tied to a request of the client's (its sign-in, before any
// session): elicitation/create with a restricted JSON Schema of primitive
// properties, answered with accept (and the content), decline or cancel.

// MethodElicitationCreate is the client method that shows a form.
const MethodElicitationCreate = "elicitation/create"

// Elicitation actions: the user's answer to a form.
const (
	ElicitationAccept  = "accept"
	ElicitationDecline = "decline"
	ElicitationCancel  = "cancel"
)

// FormField is one property of a form: a string (Options makes it a
// single choice) or a boolean. Strings are bounded: MaxLength is required
// of the agent, and the client's answer is checked against it.
type FormField struct {
	Name        string
	Type        string // "string" or "boolean"
	Title       string
	Description string
	MaxLength   int // strings: the longest answer, in characters
	Format      string
	Options     []FormOption // a single choice: the answer is one Value
	Required    bool
}

// FormOption is a choice of a single-choice field (EnumOption).
type FormOption struct {
	Value string `json:"const"`
	Title string `json:"title"`
}

// Form is what elicitation/create asks for: the fields, in their order.
type Form struct {
	Title  string
	Fields []FormField
}

// Bounds of a form: what Rebound sends, and so what the client's answer may
// hold.
const (
	maxFormFields  = 16
	maxFormOptions = 256
	maxFormString  = 64 << 10
)

// MarshalJSON writes the form as the schema's ElicitationSchema, the
// properties in the order of Fields (clients show them in that order).
func (f Form) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"object"`)
	if f.Title != "" {
		t, _ := json.Marshal(f.Title)
		b.WriteString(`,"title":`)
		b.Write(t)
	}
	b.WriteString(`,"properties":{`)
	var required []string
	for i, fd := range f.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(fd.Name)
		prop, err := json.Marshal(fieldSchema{Type: fd.Type, Title: fd.Title, Description: fd.Description,
			MaxLength: fd.MaxLength, Format: fd.Format, OneOf: fd.Options})
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(prop)
		if fd.Required {
			required = append(required, fd.Name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		r, _ := json.Marshal(required)
		b.WriteString(`,"required":`)
		b.Write(r)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type fieldSchema struct {
	Type        string       `json:"type"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MaxLength   int          `json:"maxLength,omitempty"`
	Format      string       `json:"format,omitempty"`
	OneOf       []FormOption `json:"oneOf,omitempty"`
}

// check refuses a form the schema or the bounds would not allow.
func (f Form) check() error {
	if len(f.Fields) == 0 || len(f.Fields) > maxFormFields {
		return fmt.Errorf("a form has 1 to %d fields, not %d", maxFormFields, len(f.Fields))
	}
	seen := map[string]bool{}
	for _, fd := range f.Fields {
		switch {
		case fd.Name == "" || seen[fd.Name]:
			return fmt.Errorf("field name %q is empty or repeated", fd.Name)
		case fd.Type == "string" && (fd.MaxLength < 1 || fd.MaxLength > maxFormString):
			return fmt.Errorf("field %s: maxLength must be 1 to %d", fd.Name, maxFormString)
		case fd.Type == "string" && len(fd.Options) > maxFormOptions:
			return fmt.Errorf("field %s: at most %d options", fd.Name, maxFormOptions)
		case fd.Type == "boolean" && (len(fd.Options) > 0 || fd.MaxLength != 0):
			return fmt.Errorf("field %s: a boolean has no options or length", fd.Name)
		case fd.Type != "string" && fd.Type != "boolean":
			return fmt.Errorf("field %s: type %q is not string or boolean", fd.Name, fd.Type)
		}
		seen[fd.Name] = true
	}
	return nil
}

// FormAnswer is the user's answer to a form. Values are set only when
// Action is ElicitationAccept, and hold only the form's fields, each
// checked against its field: a string (within MaxLength, one of Options
// where there are any) or a bool.
type FormAnswer struct {
	Action string
	Values map[string]any
}

// String is the answer's string field name, "" when absent.
func (a FormAnswer) String(name string) string {
	s, _ := a.Values[name].(string)
	return s
}

// FormAsker asks the user to fill in forms (elicitation/create in form
// mode), each tied to the client's request being served. The form is
// checked before it is sent; the client's answer is checked against the
// form: anything else is a *ClientError wrapping ErrInvalidResult.
type FormAsker interface {
	AskForm(ctx context.Context, message string, form Form) (FormAnswer, error)
}

// FormAuthenticator is an Authenticator that can sign in by asking the user
// through forms: for a client that advertised elicitation.form, the server
// calls AuthenticateAsking instead of Authenticate, with ask tied to the
// authenticate request, and c the client as for a session's requests (its
// updates reach sessions already open). Methods with FormOnly are
// advertised only to such clients.
type FormAuthenticator interface {
	Authenticator
	AuthenticateAsking(ctx context.Context, req AuthenticateRequest, c Client, ask FormAsker) (AuthenticateResponse, error)
}

// requestAsker is FormAsker for one request of the client's.
type requestAsker struct {
	cl editorConn
	id jsonrpc2.ID
}

// createElicitation is the params of elicitation/create in form mode,
// request-scoped.
type createElicitation struct {
	Mode            string      `json:"mode"`
	Message         string      `json:"message"`
	RequestedSchema Form        `json:"requestedSchema"`
	RequestID       jsonrpc2.ID `json:"requestId"`
}

func (r requestAsker) AskForm(ctx context.Context, message string, form Form) (FormAnswer, error) {
	const m = MethodElicitationCreate
	if !r.cl.Capabilities().ElicitationForm() {
		return FormAnswer{}, unsupported(m, "elicitation.form")
	}
	if message == "" {
		return FormAnswer{}, badRequest(m, errors.New("message is required"))
	}
	if err := form.check(); err != nil {
		return FormAnswer{}, badRequest(m, err)
	}
	p := createElicitation{Mode: "form", Message: message, RequestedSchema: form, RequestID: r.id}
	return call(ctx, r.cl, m, p, func(raw []byte) (FormAnswer, error) { return decodeFormAnswer(raw, form) })
}

// decodeFormAnswer checks the client's answer against form.
func decodeFormAnswer(raw []byte, form Form) (FormAnswer, error) {
	var r struct {
		Action  *string                    `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	if err := decodeResult(raw, &r); err != nil {
		return FormAnswer{}, err
	}
	switch {
	case r.Action == nil:
		return FormAnswer{}, errors.New("action is required")
	case *r.Action == ElicitationDecline, *r.Action == ElicitationCancel:
		return FormAnswer{Action: *r.Action}, nil
	case *r.Action != ElicitationAccept:
		// The schema's "other" actions: not known, so not taken for any.
		return FormAnswer{}, fmt.Errorf("action %s is not accept, decline or cancel", quote(*r.Action))
	}
	a := FormAnswer{Action: ElicitationAccept, Values: map[string]any{}}
	for name, v := range r.Content {
		i := slices.IndexFunc(form.Fields, func(f FormField) bool { return f.Name == name })
		if i < 0 {
			return FormAnswer{}, fmt.Errorf("content.%s is not a field of the form", clipText(name, 40))
		}
		val, err := fieldValue(form.Fields[i], v)
		if err != nil {
			return FormAnswer{}, fmt.Errorf("content.%s: %w", name, err)
		}
		if val != nil {
			a.Values[name] = val
		}
	}
	for _, f := range form.Fields {
		if _, ok := a.Values[f.Name]; f.Required && !ok {
			return FormAnswer{}, fmt.Errorf("content.%s is required", f.Name)
		}
	}
	return a, nil
}

// fieldValue is the answer to field f, nil for a JSON null (no answer).
// A string's value is never quoted in the error: it may be a key.
func fieldValue(f FormField, raw json.RawMessage) (any, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	switch f.Type {
	case "boolean":
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return nil, errors.New("must be a boolean")
		}
		return b, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, errors.New("must be a string")
	}
	if n := utf8.RuneCountInString(s); n > f.MaxLength {
		return nil, fmt.Errorf("is %d characters long; the most is %d", n, f.MaxLength)
	}
	if len(f.Options) > 0 && !slices.ContainsFunc(f.Options, func(o FormOption) bool { return o.Value == s }) {
		return nil, errors.New("is not one of the options offered")
	}
	return s, nil
}

// clipText shortens s to at most n bytes for a message, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
