package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// Sign-in inside the editor: for a client that advertises
// elicitation.form, signing in without a usable key (or with the method
// AuthMethodSetUp) asks, through forms, what `rebound login` asks in a
// terminal: the provider, its base URL when it is another server, its key
// where it needs one, and a model from its own list. What the user gives is
// checked, stored as `rebound login` stores it (Config.SetUp), and used
// from the next request on, without a restart.

// AuthMethodSetUp is the agent method that sets up the provider through
// forms, offered only to clients that can show them.
const AuthMethodSetUp = "provider-setup"

// ProviderSetUp is what the sign-in in the editor needs of the
// configuration; cmd/rebound gives it package config's set-up, the one
// `rebound login` runs.
type ProviderSetUp interface {
	// Presets are the providers offered, in order.
	Presets() []SetUpPreset
	// Check checks choice without its model: the provider, the base URL
	// and the key. Its error says what is wrong, never the key.
	Check(choice SetUpChoice) error
	// Models lists the provider's models, asked with choice's key.
	Models(ctx context.Context, choice SetUpChoice) ([]string, error)
	// Save checks and stores choice, and makes the provider for it.
	Save(ctx context.Context, choice SetUpChoice) (SetUpDone, error)
}

// SetUpPreset is a provider offered by name. BaseURL "" asks for one.
type SetUpPreset struct {
	ID, Name, BaseURL string
	NeedsKey          bool
}

// SetUpChoice is what the user chose.
type SetUpChoice struct {
	Provider, BaseURL, Key, Model string
}

// SetUpDone is a stored set-up: the provider made from it, which replaces
// the one in use, and the model.
type SetUpDone struct {
	Provider llm.Provider
	Model    string
	// KeyEnv is the variable the key was stored for; ModelFrom says where
	// the model is set now (for a provider's "no such model").
	KeyEnv, ModelFrom string
	// Stored says what was written where, for the user (no key).
	Stored string
}

// Bounds of what the forms accept (the configuration checks more).
const (
	maxURLChars   = 2048
	maxKeyChars   = 4096
	maxModelChars = 200
	// maxModelOptions is the longest model list offered as a choice;
	// past it, the name is typed.
	maxModelOptions = 200
	// signInWait bounds how long one form may stay unanswered.
	signInWait = 15 * time.Minute
)

// formSetUp is the sign-in through forms (Agent.AuthenticateAsking).
type formSetUp struct {
	setUp ProviderSetUp // Config.SetUp; nil: not offered
	auth  *signIn
	menu  *configMenu
	// open are the sessions this process holds (sessionHolder.open);
	// setModel records a session's model (optionRecorder.set).
	open     func() []*sessionState
	setModel func(ctx context.Context, s *sessionState, id, value string) (changed bool, err error)
	log      *zerolog.Logger
}

// methods is the sign-in method offered to clients that show forms, none
// without Config.SetUp.
func (f formSetUp) methods() []acp.AuthMethod {
	if f.setUp == nil {
		return nil
	}
	return []acp.AuthMethod{{ID: AuthMethodSetUp, Name: "Choose provider and model here",
		Description: "Asks, in the editor, which model provider to use, its API key and a model, and stores them as `rebound login` does.",
		FormOnly:    true}}
}

// authenticate serves authenticate for a client that can show forms
// (Agent.AuthenticateAsking). AuthMethodSetUp always asks; another method
// asks only when signing in as it would fails (no key, or one that can't
// be used).
func (f formSetUp) authenticate(ctx context.Context, req acp.AuthenticateRequest, c acp.Client, ask acp.FormAsker) (acp.AuthenticateResponse, error) {
	if req.MethodID != AuthMethodSetUp || f.setUp == nil {
		err := f.auth.authenticate(req.MethodID)
		if err == nil || f.setUp == nil {
			return acp.AuthenticateResponse{}, err
		}
	}
	done, err := f.ask(ctx, ask)
	if err != nil {
		return acp.AuthenticateResponse{}, err
	}
	f.auth.use(done.Provider, done.KeyEnv)
	f.useModel(ctx, c, done.Model, done.ModelFrom)
	f.log.Info().Str("model", done.Model).Str("variable", done.KeyEnv).Msg("signed in: provider set up in the editor")
	return acp.AuthenticateResponse{Meta: acp.Meta{"rebound/setup": map[string]any{"model": done.Model, "message": done.Stored}}}, nil
}

// ask asks the user for the provider, its URL and key, and the model, and
// stores them. Nothing is stored unless every answer was given and passed
// the checks.
func (f formSetUp) ask(ctx context.Context, ask acp.FormAsker) (SetUpDone, error) {
	su := f.setUp
	presets := su.Presets()
	form := acp.Form{Title: "Model provider", Fields: []acp.FormField{{Name: "provider", Type: "string", Title: "Provider",
		Description: "The OpenAI-compatible API Rebound sends the model's requests to.", MaxLength: 64, Options: presetOptions(presets), Required: true}}}
	answer, err := askForm(ctx, ask, "Rebound needs a model provider. Choose one; next come its API key (where it needs one) and a model.", form)
	if err != nil {
		return SetUpDone{}, err
	}
	var choice SetUpChoice
	choice.Provider = answer.String("provider")
	i := slices.IndexFunc(presets, func(p SetUpPreset) bool { return p.ID == choice.Provider })
	if i < 0 { // the answer was checked against the options
		return SetUpDone{}, setUpError("the provider chosen is not one offered", nil)
	}
	p := presets[i]
	var fields []acp.FormField
	if p.BaseURL == "" {
		fields = append(fields, acp.FormField{Name: "baseUrl", Type: "string", Title: "Base URL",
			Description: "The API's base, up to and including the version path (e.g. https://llm.example.com/v1).", MaxLength: maxURLChars, Format: "uri", Required: true})
	}
	if p.NeedsKey {
		fields = append(fields, acp.FormField{Name: "apiKey", Type: "string", Title: "API key",
			Description: "Stored in Rebound's credentials file, which only you can read; not shown again or logged.", MaxLength: maxKeyChars, Required: true})
	}
	if len(fields) > 0 {
		if answer, err = askForm(ctx, ask, fmt.Sprintf("%s: what Rebound needs to reach it.", providerName(p, "")), acp.Form{Title: p.Name, Fields: fields}); err != nil {
			return SetUpDone{}, err
		}
		choice.BaseURL, choice.Key = strings.TrimSpace(answer.String("baseUrl")), strings.TrimSpace(answer.String("apiKey"))
	}
	if err := su.Check(choice); err != nil {
		return SetUpDone{}, setUpError(scrub(err.Error(), choice.Key), nil)
	}
	if choice.Model, err = f.askModel(ctx, ask, choice, providerName(p, choice.BaseURL)); err != nil {
		return SetUpDone{}, err
	}
	done, err := su.Save(ctx, choice)
	if err != nil {
		return SetUpDone{}, setUpError("it could not be stored: "+scrub(err.Error(), choice.Key), nil)
	}
	return done, nil
}

// askModel offers the provider's models; when it lists none, or too many
// to offer, the name is typed.
func (f formSetUp) askModel(ctx context.Context, ask acp.FormAsker, choice SetUpChoice, name string) (string, error) {
	models, err := f.setUp.Models(ctx, choice)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	models = llm.CleanModelIDs(models)
	field := acp.FormField{Name: "model", Type: "string", Title: "Model", MaxLength: maxModelChars, Required: true}
	message := fmt.Sprintf("Which of %s's models?", name)
	switch {
	case err != nil:
		why := scrub(strings.TrimRight(err.Error(), ". "), choice.Key)
		f.log.Info().Str("error", why).Msg("sign-in: no model list from the provider; asking for a name")
		message = fmt.Sprintf("Rebound could not get %s's list of models (%s). Type the model's name.", name, clipBytes(why, 300))
	case len(models) > maxModelOptions:
		field.Description = fmt.Sprintf("The provider lists %d models, among them %s.", len(models), strings.Join(models[:5], ", "))
		message = fmt.Sprintf("Which of %s's models? Type its name.", name)
	default:
		for _, m := range models {
			field.Options = append(field.Options, acp.FormOption{Value: m, Title: m})
		}
	}
	answer, err := askForm(ctx, ask, message, acp.Form{Title: "Model", Fields: []acp.FormField{field}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(answer.String("model")), nil
}

// askForm asks one form, within signInWait; anything but accept is an
// error saying nothing was stored.
func askForm(ctx context.Context, ask acp.FormAsker, message string, form acp.Form) (acp.FormAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, signInWait)
	defer cancel()
	answer, err := ask.AskForm(ctx, message, form)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return answer, setUpError("the form was not answered in time", err)
	case errors.Is(err, acp.ErrInvalidResult):
		return answer, setUpError("the editor's answer to the form is not valid ("+errorDetail(err)+")", err)
	case err != nil:
		return answer, fmt.Errorf("ask for the provider's set-up: %w", err)
	case answer.Action == acp.ElicitationDecline:
		return answer, setUpError("the form was declined", nil)
	case answer.Action != acp.ElicitationAccept:
		return answer, setUpError("the form was cancelled", nil)
	}
	return answer, nil
}

// errorDetail is what a client error says, without the method's name.
func errorDetail(err error) string {
	if ce, ok := errors.AsType[*acp.ClientError](err); ok {
		return clipBytes(ce.Message, 200)
	}
	return clipBytes(err.Error(), 200)
}

// setUpError is the auth required error of a set-up that stored nothing:
// why, and what to do.
func setUpError(why string, cause error) *acp.RequestError {
	e := acp.NewAuthRequired("The model provider was not set up: " + why + "; nothing was stored. Sign in again to set it up, or run `rebound login` in a terminal.")
	e.Err = cause
	return e
}

// presetOptions are the presets as a form's choices.
func presetOptions(presets []SetUpPreset) []acp.FormOption {
	opts := make([]acp.FormOption, len(presets))
	for i, p := range presets {
		title := p.Name
		if p.BaseURL != "" {
			title += " (" + p.BaseURL + ")"
		}
		opts[i] = acp.FormOption{Value: p.ID, Title: title}
	}
	return opts
}

// scrub takes key out of s: a provider's error may echo what it was sent.
func scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[API key]")
}

// use makes p the provider from now on, as a key found by authenticate
// does; keyEnv is the variable its key is stored for, which messages name.
func (g *signIn) use(p llm.Provider, keyEnv string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.found, g.signedOut, g.retired = p, false, nil
	if keyEnv != "" {
		g.keyEnv = keyEnv
	}
}

// modelOverride is the model set up at sign-in, which replaces the
// configured one (Config.Model) as every session's default.
type modelOverride struct {
	mu          sync.Mutex
	model, from string
}

// or is the model set up, else configured.
func (o *modelOverride) or(configured string) string {
	if o == nil {
		return configured
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return cmp.Or(o.model, configured)
}

// set makes model, set up in from, the default.
func (o *modelOverride) set(model, from string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.model, o.from = model, from
}

// fromOr is where the model set up is set, else configured's from.
func (o *modelOverride) fromOr(from string) string {
	if o == nil {
		return from
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.model == "" {
		return from
	}
	return o.from
}

// useModel makes model the default of new sessions and of those open on
// the former default (made for the former provider), whose editors are
// told (config_option_update); a session on another model, chosen in the
// editor, keeps it.
func (f formSetUp) useModel(ctx context.Context, c acp.Client, model, from string) {
	old := f.menu.defaults().model
	f.menu.override.set(model, from)
	if old == model {
		return
	}
	for _, s := range f.open() {
		if s.current().model != old {
			continue
		}
		changed, err := f.setModel(ctx, s, ModelConfigID, model)
		if err != nil {
			f.log.Warn().Err(err).Str("session", s.id).Msg("sign-in: the session keeps its model")
			continue
		}
		if changed {
			notifyOptions(ctx, f.log, c, s.id, acp.ConfigOptionUpdate(f.menu.configOptions(ctx, s.current())))
		}
	}
}

// providerName names the provider in a form's words: a preset by its name,
// another server by its host once it is known ("Which of Another
// OpenAI-compatible server (its URL)'s models?" read badly).
func providerName(p SetUpPreset, baseURL string) string {
	if p.BaseURL != "" {
		return p.Name
	}
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		return u.Host
	}
	return "The server"
}
