package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
)

// Preset is a provider `rebound login` offers by name.
type Preset struct {
	ID, Name, BaseURL string
	// KeyEnv is the variable its key is stored under, so a key for one
	// provider is never sent to another. "" for a custom URL: the
	// configured provider.api_key_env is kept.
	KeyEnv string
	// Placeholder, for a server that needs no key (Ollama, LM Studio), is
	// stored instead of asking: Rebound sends a key to every provider, and
	// these ignore it.
	Placeholder string
}

// Presets are the providers `rebound login` offers, in its menu's order;
// the last, with no URL, is "another URL".
var Presets = []Preset{
	{ID: "openai", Name: "OpenAI", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY"},
	{ID: "deepseek", Name: "DeepSeek", BaseURL: "https://api.deepseek.com/v1", KeyEnv: "DEEPSEEK_API_KEY"},
	{ID: "openrouter", Name: "OpenRouter", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY"},
	{ID: "groq", Name: "Groq", BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY"},
	{ID: "mistral", Name: "Mistral", BaseURL: "https://api.mistral.ai/v1", KeyEnv: "MISTRAL_API_KEY"},
	{ID: "together", Name: "Together", BaseURL: "https://api.together.xyz/v1", KeyEnv: "TOGETHER_API_KEY"},
	{ID: "ollama", Name: "Ollama on this machine", BaseURL: "http://localhost:11434/v1", KeyEnv: "OLLAMA_API_KEY", Placeholder: "ollama"},
	{ID: "lmstudio", Name: "LM Studio on this machine", BaseURL: "http://localhost:1234/v1", KeyEnv: "LM_STUDIO_API_KEY", Placeholder: "lm-studio"},
	{ID: "custom", Name: "Another OpenAI-compatible server (its URL)"},
}

// PresetIDs lists the IDs, for usage and errors.
func PresetIDs() string {
	ids := make([]string, len(Presets))
	for i, p := range Presets {
		ids[i] = p.ID
	}
	return strings.Join(ids, ", ")
}

// Bounds of the set-up: how long the model list may take, how many of its
// names are shown, and the longest answer read from the terminal.
const (
	modelsTimeout = 15 * time.Second
	maxShown      = 60
	maxAnswer     = 4096
	maxShownError = 500
)

// setUp is LoginWith's provider set-up: see there.
func setUp(ctx context.Context, cfg Config, credPath string, flags Flags, choice LoginChoice, getenv func(string) string, home string, in io.Reader, prompt io.Writer) (LoginResult, error) {
	tty := isTerminal(in)
	preset, err := choosePreset(ctx, cfg, choice, tty, in, prompt)
	if err != nil {
		return LoginResult{}, err
	}
	base := preset.BaseURL
	if choice.BaseURL != "" {
		base = choice.BaseURL
	}
	if base == "" {
		if !tty {
			return LoginResult{}, errors.New("--provider custom needs --base-url")
		}
		if base, err = readLine(ctx, in, prompt, "Base URL of the API, up to and including the version path (e.g. https://llm.example.com/v1): "); err != nil {
			return LoginResult{}, err
		}
	}
	_, base, keyEnv, err := ResolveChoice(cfg, preset.ID, base)
	if err != nil {
		return LoginResult{}, err
	}
	if choice.Model == "" && !tty {
		return LoginResult{}, errors.New("--model is needed when the input is not a terminal (the model list is offered on a terminal)")
	}
	key := preset.Placeholder
	if key == "" {
		name := preset.Name
		if preset.ID == "custom" {
			name = base
		}
		if key, err = readKey(ctx, in, prompt, fmt.Sprintf("API key for %s (stored in %s as %s; not shown as you type): ", name, credPath, keyEnv)); err != nil {
			return LoginResult{}, err
		}
	}
	model, modelsErr := choice.Model, error(nil)
	if model == "" {
		if model, modelsErr, err = chooseModel(ctx, base, key, choice.HTTP, in, prompt); err != nil {
			return LoginResult{}, err
		}
	}
	res, err := store(cfg, credPath, flags, getenv, home, keyEnv, base, key, model)
	if err != nil {
		return LoginResult{}, err
	}
	res.ModelsError = modelsErr
	return res, nil
}

// store writes what a set-up chose, the terminal's or the editor's: base
// URL, model and keyEnv to the config file Rebound reads, then the key to
// the credentials file under keyEnv. The model name is checked first.
func store(cfg Config, credPath string, flags Flags, getenv func(string) string, home, keyEnv, base, key, model string) (LoginResult, error) {
	if err := checkModelName(model); err != nil {
		return LoginResult{}, err
	}
	res := LoginResult{Path: credPath, Name: keyEnv, BaseURL: base, Model: model}
	res.Config = cfg.Source
	if res.Config == "" {
		if res.Config = defaultConfigPath(flags, getenv, home); res.Config == "" {
			return LoginResult{}, errors.New("no place for the config file: neither $XDG_CONFIG_HOME nor the home directory is known; set XDG_CONFIG_HOME, or " + EnvConfig)
		}
	}
	// The settings first: if the file cannot be edited, nothing changed.
	if err := SetProviderKeys(res.Config, map[string]string{"base_url": base, "model": model, "api_key_env": keyEnv}); err != nil {
		return LoginResult{}, err
	}
	if err := StoreAPIKey(credPath, keyEnv, key); err != nil {
		return LoginResult{}, err
	}
	res.Shadowed = getenv(keyEnv) != ""
	for _, v := range []string{EnvBaseURL, EnvModel} {
		if getenv(v) != "" {
			res.Overridden = append(res.Overridden, v)
		}
	}
	return res, nil
}

// ProviderChoice is a provider set up elsewhere than on the terminal (the
// editor's sign-in): a Preset's ID, the base URL (required for "custom",
// else the preset's when empty), the key (ignored for a preset with a
// Placeholder) and the model.
type ProviderChoice struct {
	Provider, BaseURL, Key, Model string
}

// SaveProvider stores choice as `rebound login` stores what it asked: the
// same checks, the same config keys and credentials entry, for the settings
// flags, getenv and home give (as for Load). The key appears in no error.
func SaveProvider(flags Flags, getenv func(string) string, home string, choice ProviderChoice) (LoginResult, error) {
	cfg, credPath, err := credentialsTarget(flags, getenv, home)
	if err != nil {
		return LoginResult{}, err
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	preset, base, keyEnv, err := ResolveChoice(cfg, choice.Provider, choice.BaseURL)
	if err != nil {
		return LoginResult{}, err
	}
	key := preset.Placeholder
	if key == "" {
		if key = choice.Key; key == "" {
			return LoginResult{}, fmt.Errorf("%s needs an API key", preset.Name)
		}
		if err := CheckAPIKey(key); err != nil {
			return LoginResult{}, err
		}
	}
	return store(cfg, credPath, flags, getenv, home, keyEnv, base, key, choice.Model)
}

// ResolveChoice is the preset id names, its base URL (base when given, which
// "custom" requires), checked, and the variable its key is stored under
// (cfg's provider.api_key_env for "custom").
func ResolveChoice(cfg Config, id, base string) (Preset, string, string, error) {
	i := slices.IndexFunc(Presets, func(p Preset) bool { return p.ID == id })
	if i < 0 {
		return Preset{}, "", "", fmt.Errorf("provider %q is not one of %s", clip(id), PresetIDs())
	}
	p := Presets[i]
	if base == "" {
		base = p.BaseURL
	}
	if base == "" {
		return Preset{}, "", "", errors.New("another server needs its base URL")
	}
	if problem := checkBaseURL(base); problem != "" {
		return Preset{}, "", "", errors.New("the base URL " + problem)
	}
	keyEnv := p.KeyEnv
	if keyEnv == "" {
		keyEnv = cfg.Provider.APIKeyEnv
	}
	return p, base, keyEnv, nil
}

// CheckBaseURL says what is wrong with s as a provider's base URL, "" when
// nothing is.
func CheckBaseURL(s string) string { return checkBaseURL(s) }

// CheckModelName is provider.models' rule for a model name.
func CheckModelName(m string) error { return checkModelName(m) }

// ListModels is the provider's model list (GET {base}/models through doer,
// nil: a plain client), within the set-up's time bound.
func ListModels(ctx context.Context, base, key string, doer llm.HTTPDoer) ([]string, error) {
	lctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	ids, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: base, APIKey: key, HTTPClient: doer}).ListModels(lctx)
	if err == nil && len(ids) == 0 {
		err = errors.New("the provider listed no models")
	}
	return ids, err
}

// defaultConfigPath is the file a new config is written to: the one
// --config or REBOUND_CONFIG names, else the first default place.
func defaultConfigPath(flags Flags, getenv func(string) string, home string) string {
	if flags.ConfigPath != nil {
		return *flags.ConfigPath
	}
	if p := getenv(EnvConfig); p != "" {
		return p
	}
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "rebound", "config.toml")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "rebound", "config.toml")
}

// choosePreset is the provider the command line names, else the one the
// user picks from the menu (Enter: the one configured now).
func choosePreset(ctx context.Context, cfg Config, choice LoginChoice, tty bool, in io.Reader, prompt io.Writer) (Preset, error) {
	byID := func(id string) (Preset, bool) {
		for _, p := range Presets {
			if strings.EqualFold(p.ID, id) {
				return p, true
			}
		}
		return Preset{}, false
	}
	switch {
	case choice.Provider != "":
		p, ok := byID(choice.Provider)
		if !ok {
			return Preset{}, fmt.Errorf("--provider %q is not one of %s", choice.Provider, PresetIDs())
		}
		return p, nil
	case choice.BaseURL != "" || !tty:
		custom, _ := byID("custom")
		return custom, nil
	}
	current := len(Presets) // custom
	var b strings.Builder
	b.WriteString("Which model provider?\n")
	for i, p := range Presets {
		mark := " "
		if p.BaseURL != "" && p.BaseURL == strings.TrimRight(cfg.Provider.BaseURL, "/") {
			mark, current = "*", i+1
		}
		fmt.Fprintf(&b, " %s%d. %-44s %s\n", mark, i+1, p.Name, p.BaseURL)
	}
	fmt.Fprintf(&b, "Provider [1-%d, or Enter for %d]: ", len(Presets), current)
	answer, err := readLine(ctx, in, prompt, b.String())
	if err != nil {
		return Preset{}, err
	}
	if answer == "" {
		return Presets[current-1], nil
	}
	if n, err := strconv.Atoi(answer); err == nil && n >= 1 && n <= len(Presets) {
		return Presets[n-1], nil
	}
	if p, ok := byID(answer); ok {
		return p, nil
	}
	return Preset{}, fmt.Errorf("%q is not one of 1 to %d (or %s)", clip(answer), len(Presets), PresetIDs())
}

// chooseModel offers the provider's models (GET {base}/models through
// doer) and reads the user's pick: a number of the list or a name. When
// the list cannot be had, it says why and asks for a name.
func chooseModel(ctx context.Context, base, key string, doer llm.HTTPDoer, in io.Reader, prompt io.Writer) (string, error, error) {
	ids, listErr := ListModels(ctx, base, key, doer)
	if ctx.Err() != nil {
		return "", nil, ctx.Err()
	}
	if listErr != nil {
		// The provider's words, on one inert line: a hostile or broken
		// answer must not drive the terminal.
		fmt.Fprintf(prompt, "Could not get the provider's list of models: %s\n", text.InertLine(listErr.Error(), maxShownError))
		m, err := readLine(ctx, in, prompt, "Model name: ")
		return m, listErr, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Models at %s:\n", base)
	for i, id := range ids[:min(len(ids), maxShown)] {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, id)
	}
	if len(ids) > maxShown {
		fmt.Fprintf(&b, "  (and %d more: type a name)\n", len(ids)-maxShown)
	}
	fmt.Fprintf(&b, "Model [1-%d, or a name]: ", min(len(ids), maxShown))
	answer, err := readLine(ctx, in, prompt, b.String())
	if err != nil {
		return "", nil, err
	}
	if n, err := strconv.Atoi(answer); err == nil && n >= 1 && n <= min(len(ids), maxShown) {
		return ids[n-1], nil, nil
	}
	return answer, nil, nil
}

// checkModelName is provider.models' rule for a name.
func checkModelName(m string) error {
	if err := llm.CheckModelID(m); err != nil {
		return fmt.Errorf("%s is not a model name: it %w", quoteClipped(m), err)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// readLine asks question on the terminal in and reads one line, trimmed.
// It reads a byte at a time, so nothing typed after the line is taken
// from the key read next. When ctx ends first, ctx's error is returned.
func readLine(ctx context.Context, in io.Reader, prompt io.Writer, question string) (string, error) {
	fmt.Fprint(prompt, question)
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var line []byte
		var one [1]byte
		for len(line) <= maxAnswer {
			n, err := in.Read(one[:])
			if n == 1 {
				if one[0] == '\n' {
					break
				}
				line = append(line, one[0])
				continue
			}
			if err != nil {
				if err == io.EOF && len(line) > 0 {
					break
				}
				done <- result{"", fmt.Errorf("read the answer: %w", err)}
				return
			}
		}
		if len(line) > maxAnswer {
			done <- result{"", fmt.Errorf("the answer is longer than %d bytes", maxAnswer)}
			return
		}
		done <- result{strings.TrimSpace(string(line)), nil}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		fmt.Fprintln(prompt)
		return "", ctx.Err()
	}
}
