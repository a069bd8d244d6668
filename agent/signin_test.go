package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
)

// fakeForms is the editor's user answering the sign-in forms, in order.
type fakeForms struct {
	answers []acp.FormAnswer
	err     error // returned instead of an answer once they run out, if set
	asked   []acp.Form
	message []string
}

func (f *fakeForms) AskForm(_ context.Context, message string, form acp.Form) (acp.FormAnswer, error) {
	f.asked = append(f.asked, form)
	f.message = append(f.message, message)
	if len(f.answers) == 0 {
		if f.err != nil {
			return acp.FormAnswer{}, f.err
		}
		return acp.FormAnswer{Action: acp.ElicitationCancel}, nil
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a, nil
}

func accept(kv ...string) acp.FormAnswer {
	v := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		v[kv[i]] = kv[i+1]
	}
	return acp.FormAnswer{Action: acp.ElicitationAccept, Values: v}
}

// fakeSetUp is the configuration's set-up: it records what it was given.
type fakeSetUp struct {
	checkErr  error
	models    []string
	modelsErr error
	saveErr   error
	provider  llm.Provider
	checked   []agent.SetUpChoice
	listed    []agent.SetUpChoice
	saved     []agent.SetUpChoice
}

func (s *fakeSetUp) Presets() []agent.SetUpPreset {
	return []agent.SetUpPreset{
		{ID: "openai", Name: "OpenAI", BaseURL: "https://api.openai.com/v1", NeedsKey: true},
		{ID: "ollama", Name: "Ollama", BaseURL: "http://localhost:11434/v1"},
		{ID: "custom", Name: "Another server", NeedsKey: true},
	}
}

func (s *fakeSetUp) Check(c agent.SetUpChoice) error {
	s.checked = append(s.checked, c)
	return s.checkErr
}

func (s *fakeSetUp) Models(_ context.Context, c agent.SetUpChoice) ([]string, error) {
	s.listed = append(s.listed, c)
	return s.models, s.modelsErr
}

func (s *fakeSetUp) Save(_ context.Context, c agent.SetUpChoice) (agent.SetUpDone, error) {
	if s.saveErr != nil {
		return agent.SetUpDone{}, s.saveErr
	}
	s.saved = append(s.saved, c)
	return agent.SetUpDone{Provider: s.provider, Model: c.Model, KeyEnv: "NEW_API_KEY", ModelFrom: "provider.model in config.toml", Stored: "stored"}, nil
}

const formKey = "sk-typed-into-the-form-0123"

// setUpAgent starts without a key, with set-up su.
func setUpAgent(t *testing.T, su agent.ProviderSetUp) *agent.Agent {
	t.Helper()
	a := agent.New(agent.Config{StateDir: t.TempDir(), Model: "old-model", MaxTokens: 100, APIKeyEnv: "OPENAI_API_KEY", Models: []string{"picked-model"},
		NewProvider: func() (llm.Provider, error) { return nil, nil }, SetUp: su, Logger: zerolog.Nop()})
	t.Cleanup(func() { a.Close() })
	return a
}

func modelOf(t *testing.T, opts []acp.ConfigOption) string {
	t.Helper()
	for _, o := range opts {
		if o.ID == agent.ModelConfigID {
			return o.CurrentValue
		}
	}
	t.Fatalf("no model option in %v", opts)
	return ""
}

// Signing in without a key asks the provider, its key and a model from its
// list, stores them (Save, once, with all of it), and the next prompt of a
// session already open goes to the new provider with the new model; the
// session's editor is told of the model, and a new session starts on it.
// A session on another model than the former default, chosen, keeps it.
func TestSignIn_SetsUpAndSwaps(t *testing.T) {
	p := &fakeProvider{chunks: []llm.Chunk{{Content: "hi"}, {FinishReason: "stop"}}}
	su := &fakeSetUp{models: []string{"new-model", "other-model"}, provider: p}
	a := setUpAgent(t, su)
	open, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	chose, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetSessionConfigOption(t.Context(), acp.SetSessionConfigOptionRequest{SessionID: chose.SessionID, ConfigID: agent.ModelConfigID, Value: []byte(`"picked-model"`)}, &recorder{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: open.SessionID, Prompt: prompt("hi")}, &recorder{}); err == nil {
		t.Fatal("a prompt without a key was answered")
	}

	forms := &fakeForms{answers: []acp.FormAnswer{accept("provider", "openai"), accept("apiKey", " "+formKey+" "), accept("model", "new-model")}}
	rec := &recorder{}
	res, err := a.AuthenticateAsking(t.Context(), acp.AuthenticateRequest{MethodID: agent.AuthMethodAPIKey}, rec, forms)
	if err != nil {
		t.Fatalf("AuthenticateAsking: %v", err)
	}
	if res.Meta["rebound/setup"] == nil {
		t.Errorf("the answer does not say what was stored: %v", res.Meta)
	}
	want := agent.SetUpChoice{Provider: "openai", Key: formKey, Model: "new-model"}
	if len(su.saved) != 1 || su.saved[0] != want {
		t.Errorf("saved %+v, want once %+v", su.saved, want)
	}
	if len(forms.asked) != 3 {
		t.Fatalf("%d forms asked, want 3", len(forms.asked))
	}
	if f := forms.asked[1]; len(f.Fields) != 1 || f.Fields[0].Name != "apiKey" {
		t.Errorf("the second form asks %+v, want the key only (the preset has its URL)", f.Fields)
	}
	var offered []string
	for _, o := range forms.asked[2].Fields[0].Options {
		offered = append(offered, o.Value)
	}
	if !slices.Equal(offered, su.models) {
		t.Errorf("models offered %q, want the provider's %q", offered, su.models)
	}

	if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: open.SessionID, Prompt: prompt("again")}, &recorder{}); err != nil {
		t.Fatalf("the prompt after signing in: %v", err)
	}
	if len(p.requests) != 1 || p.requests[0].Model != "new-model" {
		t.Fatalf("requests to the new provider: %+v, want one for new-model", p.requests)
	}
	var told bool
	for _, u := range rec.updates {
		told = told || u.SessionUpdate == acp.UpdateConfigOption && modelOf(t, u.ConfigOptions) == "new-model"
	}
	if !told {
		t.Errorf("the open session's editor was not told its model changed: %v", rec.texts())
	}
	s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if m := modelOf(t, s.ConfigOptions); m != "new-model" {
		t.Errorf("a new session's model is %s, want new-model", m)
	}
	_, err = a.Prompt(t.Context(), acp.PromptRequest{SessionID: chose.SessionID, Prompt: prompt("chosen")}, &recorder{})
	if err != nil || p.requests[len(p.requests)-1].Model != "picked-model" {
		t.Errorf("a session whose model was chosen: %v, model %s; want it kept", err, p.requests[len(p.requests)-1].Model)
	}
}

// A preset that needs no key (a local server) asks none; another server
// asks its URL with the key.
func TestSignIn_FormsFollowThePreset(t *testing.T) {
	for _, tt := range []struct {
		provider string
		answers  []acp.FormAnswer
		want     agent.SetUpChoice
		forms    int
		model    string // the model form's question
	}{
		{"ollama", []acp.FormAnswer{accept("provider", "ollama"), accept("model", "llama3")}, agent.SetUpChoice{Provider: "ollama", Model: "llama3"}, 2, "Which of Ollama's models?"},
		{"custom", []acp.FormAnswer{accept("provider", "custom"), accept("baseUrl", "https://llm.example.com/v1", "apiKey", formKey), accept("model", "m1")},
			agent.SetUpChoice{Provider: "custom", BaseURL: "https://llm.example.com/v1", Key: formKey, Model: "m1"}, 3, "Which of llm.example.com's models?"},
	} {
		t.Run(tt.provider, func(t *testing.T) {
			su := &fakeSetUp{models: []string{"llama3", "m1"}, provider: &fakeProvider{}}
			a := setUpAgent(t, su)
			forms := &fakeForms{answers: tt.answers}
			if _, err := a.AuthenticateAsking(t.Context(), acp.AuthenticateRequest{MethodID: agent.AuthMethodSetUp}, &recorder{}, forms); err != nil {
				t.Fatal(err)
			}
			if len(forms.asked) != tt.forms || len(su.saved) != 1 || su.saved[0] != tt.want {
				t.Errorf("%d forms, saved %+v; want %d and %+v", len(forms.asked), su.saved, tt.forms, tt.want)
			}
			if got := forms.message[len(forms.message)-1]; got != tt.model {
				t.Errorf("the model form asks %q, want %q", got, tt.model)
			}
		})
	}
}

// Declined, cancelled, unanswered, refused by the checks or not valid:
// nothing is stored, the error is auth required saying so and what to do,
// the key never in it, and the next prompt still needs signing in.
func TestSignIn_NothingStored(t *testing.T) {
	invalid := &acp.ClientError{Method: acp.MethodElicitationCreate, Message: "content.provider: is not one of the options offered", Err: acp.ErrInvalidResult}
	for _, tt := range []struct {
		name    string
		answers []acp.FormAnswer
		askErr  error
		su      fakeSetUp
		want    string
		listed  int
	}{
		{name: "declined", answers: []acp.FormAnswer{{Action: acp.ElicitationDecline}}, want: "the form was declined"},
		{name: "cancelled at the key", answers: []acp.FormAnswer{accept("provider", "openai"), {Action: acp.ElicitationCancel}}, want: "the form was cancelled"},
		{name: "cancelled at the model", answers: []acp.FormAnswer{accept("provider", "openai"), accept("apiKey", formKey), {Action: acp.ElicitationCancel}},
			su: fakeSetUp{models: []string{"m"}}, want: "the form was cancelled", listed: 1},
		{name: "not valid", askErr: invalid, want: "the editor's answer to the form is not valid (content.provider: is not one of the options offered)"},
		{name: "not answered in time", askErr: fmt.Errorf("elicitation/create abandoned: %w", context.DeadlineExceeded), want: "not answered in time"},
		{name: "refused by the checks, which echo the key", answers: []acp.FormAnswer{accept("provider", "custom"), accept("baseUrl", "ftp://x", "apiKey", formKey)},
			su: fakeSetUp{checkErr: errors.New("the base URL must be http(s), key " + formKey)}, want: "the base URL must be http(s), key [API key]"},
		{name: "not stored", answers: []acp.FormAnswer{accept("provider", "openai"), accept("apiKey", formKey), accept("model", "m")},
			su: fakeSetUp{models: []string{"m"}, saveErr: errors.New("config.toml: permission denied")}, want: "it could not be stored: config.toml: permission denied", listed: 1},
		{name: "unknown provider", answers: []acp.FormAnswer{accept("provider", "evil")}, want: "not one offered"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			su := tt.su
			a := setUpAgent(t, &su)
			forms := &fakeForms{answers: tt.answers, err: tt.askErr}
			_, err := a.AuthenticateAsking(t.Context(), acp.AuthenticateRequest{MethodID: agent.AuthMethodSetUp}, &recorder{}, forms)
			re, ok := errors.AsType[*acp.RequestError](err)
			if !ok || re.Code != acp.CodeAuthRequired || !strings.Contains(re.Message, tt.want) || !strings.Contains(re.Message, "nothing was stored") {
				t.Fatalf("error %v, want auth required saying %q and that nothing was stored", err, tt.want)
			}
			if strings.Contains(re.Message, formKey) {
				t.Errorf("the error repeats the key: %s", re.Message)
			}
			if len(su.saved) != 0 || len(su.listed) != tt.listed {
				t.Errorf("saved %v, listed %d times; want nothing saved, %d lists", su.saved, len(su.listed), tt.listed)
			}
			s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("hi")}, &recorder{}); err == nil {
				t.Error("a prompt was answered after a set-up that stored nothing")
			}
		})
	}
}

// The model is typed when the provider has no list (why is said, the key
// taken out of a provider's error that echoes it) or too long a list to
// offer.
func TestSignIn_ModelTyped(t *testing.T) {
	many := make([]string, 500)
	for i := range many {
		many[i] = fmt.Sprintf("model-%03d", i)
	}
	for _, tt := range []struct {
		name      string
		su        fakeSetUp
		inMessage string
	}{
		{"no list", fakeSetUp{modelsErr: errors.New("401: invalid key " + formKey)}, "could not get OpenAI's list of models (401: invalid key [API key])"},
		{"too many", fakeSetUp{models: many}, "Type its name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			su := tt.su
			su.provider = &fakeProvider{}
			a := setUpAgent(t, &su)
			forms := &fakeForms{answers: []acp.FormAnswer{accept("provider", "openai"), accept("apiKey", formKey), accept("model", " typed-model ")}}
			if _, err := a.AuthenticateAsking(t.Context(), acp.AuthenticateRequest{MethodID: agent.AuthMethodSetUp}, &recorder{}, forms); err != nil {
				t.Fatal(err)
			}
			last := forms.asked[len(forms.asked)-1].Fields[0]
			if len(last.Options) != 0 || last.MaxLength == 0 {
				t.Errorf("model field %+v, want free text, bounded", last)
			}
			if msg := forms.message[len(forms.message)-1]; !strings.Contains(msg, tt.inMessage) || strings.Contains(msg, formKey) {
				t.Errorf("message %q, want it to say %q and not the key", msg, tt.inMessage)
			}
			if len(su.saved) != 1 || su.saved[0].Model != "typed-model" {
				t.Errorf("saved %+v, want typed-model", su.saved)
			}
		})
	}
}

// With a key, or without a set-up, AuthenticateAsking is Authenticate: no
// form is asked; provider-setup is offered only with a set-up, and only to
// clients that show forms.
func TestSignIn_OnlyWhenNeeded(t *testing.T) {
	su := &fakeSetUp{}
	withKey := agent.New(agent.Config{StateDir: t.TempDir(), Model: "m", Provider: &fakeProvider{}, SetUp: su, Logger: zerolog.Nop()})
	defer withKey.Close()
	forms := &fakeForms{}
	if _, err := withKey.AuthenticateAsking(t.Context(), acp.AuthenticateRequest{MethodID: agent.AuthMethodAPIKey}, &recorder{}, forms); err != nil || len(forms.asked) != 0 {
		t.Errorf("with a key: %v, %d forms; want no error and none", err, len(forms.asked))
	}
	i := slices.IndexFunc(withKey.AuthMethods(), func(m acp.AuthMethod) bool { return m.ID == agent.AuthMethodSetUp })
	if i < 0 || !withKey.AuthMethods()[i].FormOnly {
		t.Errorf("methods %+v, want provider-setup, form only", withKey.AuthMethods())
	}

	none := agent.New(agent.Config{StateDir: t.TempDir(), Model: "m", Logger: zerolog.Nop()})
	defer none.Close()
	_, err := none.AuthenticateAsking(t.Context(), acp.AuthenticateRequest{MethodID: agent.AuthMethodAPIKey}, &recorder{}, forms)
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeAuthRequired || len(forms.asked) != 0 {
		t.Errorf("without a set-up: %v, %d forms; want auth required and none", err, len(forms.asked))
	}
	if slices.ContainsFunc(none.AuthMethods(), func(m acp.AuthMethod) bool { return m.ID == agent.AuthMethodSetUp }) {
		t.Error("provider-setup offered without a set-up")
	}
}
