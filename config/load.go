package config

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/rebound-agent/rebound/internal/netclient"
	"github.com/rebound-agent/rebound/internal/regfile"
	"github.com/rebound-agent/rebound/internal/text"
)

// Environment variables read by Load, besides the one named by
// provider.api_key_env.
const (
	EnvBaseURL   = "OPENAI_BASE_URL"
	EnvModel     = "REBOUND_MODEL"
	EnvStateDir  = "REBOUND_STATE_DIR"
	EnvConfig    = "REBOUND_CONFIG"
	EnvLogLevel  = "REBOUND_LOG_LEVEL"
	EnvStreaming = "REBOUND_STREAMING"
	EnvCAFile    = netclient.EnvCAFile
)

// Flags are the command-line overrides; a nil pointer means "not given".
type Flags struct {
	BaseURL, Model, StateDir, ConfigPath, LogLevel, Streaming *string
}

// Flag names, as typed on the command line without the dashes.
const (
	flagBaseURL   = "base-url"
	flagModel     = "model"
	flagStateDir  = "state-dir"
	flagConfig    = "config"
	flagLogLevel  = "log-level"
	flagStreaming = "streaming"
)

// RegisterFlags binds the six flags on fs and returns a func that yields
// Flags with only the flags actually set, so that a flag left alone does not
// override the environment or the file with its zero value.
func RegisterFlags(fs *flag.FlagSet) func() Flags {
	baseURL := fs.String(flagBaseURL, "", "provider base URL (overrides "+EnvBaseURL+" and provider.base_url; default "+defaultBaseURL+")")
	model := fs.String(flagModel, "", "model name (overrides "+EnvModel+" and provider.model; default "+defaultModel+")")
	stateDir := fs.String(flagStateDir, "", "directory for session logs (overrides "+EnvStateDir+" and state_dir; default $XDG_STATE_HOME/rebound or ~/.local/state/rebound)")
	configPath := fs.String(flagConfig, "", "TOML config file (overrides "+EnvConfig+"; default $XDG_CONFIG_HOME/rebound/config.toml or ~/.config/rebound/config.toml, if present)")
	logLevel := fs.String(flagLogLevel, "", "log level: debug, info, warn or error (overrides "+EnvLogLevel+" and log_level; default "+defaultLogLevel+")")
	streaming := fs.String(flagStreaming, "", "live (show replies as they stream) or held (show a reply once it has finished) (overrides "+EnvStreaming+" and agent.streaming; default "+StreamingLive+")")
	return func() Flags {
		var f Flags
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case flagBaseURL:
				f.BaseURL = baseURL
			case flagModel:
				f.Model = model
			case flagStateDir:
				f.StateDir = stateDir
			case flagConfig:
				f.ConfigPath = configPath
			case flagLogLevel:
				f.LogLevel = logLevel
			case flagStreaming:
				f.Streaming = streaming
			}
		})
		return f
	}
}

// Load resolves defaults < file < environment < flags and validates the
// result. getenv is os.Getenv in production; home is os.UserHomeDir's result
// ("" if unknown). The file is the one named by --config or REBOUND_CONFIG,
// which must exist, else the first of $XDG_CONFIG_HOME/rebound/config.toml
// and ~/.config/rebound/config.toml that exists, else none.
//
// Errors are *FieldError values (possibly several, joined) naming the
// source and key, or file errors naming the path; syntax errors read
// "path:line:col: message" and wrap the toml.ParseError.
//
// The API key is the value of the variable named by provider.api_key_env,
// else that variable's entry in the credentials file `rebound login` writes
// (see APIKey). A credentials file that can't be used (others can read it)
// does not stop start-up: the key is then empty, like a missing one, and
// what needs the key asks APIKey again and reports the problem, as ssh
// refuses a private key that is too open and goes on without it. An editor
// shows that message with its sign-in; start-up errors it may not show.
func Load(flags Flags, getenv func(string) string, home string) (Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg, err := loadSettings(flags, getenv, home)
	if err != nil {
		return Config{}, err
	}
	// Read only after validation, so a bad api_key_env never selects a
	// variable to read.
	if key, err := APIKey(cfg.Provider.APIKeyEnv, getenv, home); err == nil {
		cfg.Provider.APIKey = key
	}
	return cfg, nil
}

// loadSettings is Load without the API key, which `rebound login` needs
// (it must work when the credentials file is the problem).
func loadSettings(flags Flags, getenv func(string) string, home string) (Config, error) {
	cfg := Default()
	// origin maps a dotted key to where its current value came from, so a
	// validation error can point at the file, the variable or the flag.
	origin := map[string]string{}
	if err := readSettingsFile(&cfg, origin, flags, getenv, home); err != nil {
		return Config{}, err
	}
	defaulted := false // state_dir = "" in the file also means the default
	if d := stateHome(getenv, home); cfg.StateDir == "" && d != "" {
		cfg.StateDir, defaulted = d, true
	}
	overrideSettings(&cfg, origin, flags, getenv)
	if err := settleStateDir(&cfg, origin, defaulted, getenv); err != nil {
		return Config{}, err
	}
	cfg.ModelFrom = modelOrigin(origin["provider.model"])
	if err := cfg.Validate(); err != nil {
		return Config{}, attribute(err, origin, cfg.Source)
	}
	if err := checkNetworkSettings(cfg, origin, getenv); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// readSettingsFile decodes the config file into cfg, if there is one. A
// file the user named must exist; the default one is optional, but one
// that exists and can't be read is still an error.
func readSettingsFile(cfg *Config, origin map[string]string, flags Flags, getenv func(string) string, home string) error {
	path, explicit, err := configPath(flags, getenv, home)
	if err != nil || path == "" {
		return err
	}
	data, err := readConfigFile(path, explicit != "")
	switch {
	case err == nil:
		if err := decodeFile(path, data, cfg, origin); err != nil {
			return err
		}
		cfg.Source = path
	case explicit != "":
		return fmt.Errorf("%s: %w", explicit, err)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return nil
}

// overrideSettings lets the variables, then the flags, replace what the
// file said. An empty variable counts as unset, as shells make the two
// hard to tell apart; an empty flag was typed on purpose and is validated.
func overrideSettings(cfg *Config, origin map[string]string, flags Flags, getenv func(string) string) {
	for _, o := range []struct {
		key  string
		dst  *string
		env  string
		flag *string
		name string
	}{
		{"provider.base_url", &cfg.Provider.BaseURL, EnvBaseURL, flags.BaseURL, flagBaseURL},
		{"provider.model", &cfg.Provider.Model, EnvModel, flags.Model, flagModel},
		{"state_dir", &cfg.StateDir, EnvStateDir, flags.StateDir, flagStateDir},
		{"log_level", &cfg.LogLevel, EnvLogLevel, flags.LogLevel, flagLogLevel},
		{"agent.streaming", &cfg.Agent.Streaming, EnvStreaming, flags.Streaming, flagStreaming},
		{"provider.ca_file", &cfg.Provider.CAFile, EnvCAFile, nil, ""},
	} {
		if v := getenv(o.env); v != "" {
			*o.dst, origin[o.key] = v, o.env
		}
		if o.flag != nil {
			*o.dst, origin[o.key] = *o.flag, "--"+o.name
		}
	}
}

// settleStateDir refuses an empty state directory, naming who set it
// empty or, for the default, what is missing; and says where it came from
// (defaulted: the default stood in for the file's "") and what to do if it
// can't be written.
func settleStateDir(cfg *Config, origin map[string]string, defaulted bool, getenv func(string) string) error {
	src := origin["state_dir"]
	if cfg.StateDir == "" {
		if src != "" {
			return &FieldError{Source: src, Key: "state_dir", Problem: "must not be empty"}
		}
		return &FieldError{Key: "state_dir", Problem: "no default: neither $XDG_STATE_HOME nor the home directory is known; set " + EnvStateDir + ", --" + flagStateDir + " or state_dir in the config file"}
	}
	if defaulted && src == cfg.Source { // neither the variable nor the flag replaced it
		src = ""
	}
	cfg.StateDirFrom, cfg.StateDirFix = stateDirOrigin(src, getenv)
	return nil
}

// checkNetworkSettings reads the CA file and the proxy variables now, so a
// bad one stops the start naming its setting rather than failing every
// request later (a proxy variable that is no URL would be dropped, and
// requests sent without the proxy).
func checkNetworkSettings(cfg Config, origin map[string]string, getenv func(string) string) error {
	if cfg.Provider.CAFile != "" {
		if err := netclient.CheckCAFile(cfg.Provider.CAFile); err != nil {
			return &FieldError{Source: origin["provider.ca_file"], Key: "provider.ca_file", Problem: err.Error()}
		}
	}
	return netclient.CheckProxies(getenv)
}

// CAFrom names the setting that gave provider.ca_file, for errors.
func (c Config) CAFrom(getenv func(string) string) string {
	if getenv != nil && getenv(EnvCAFile) != "" {
		return EnvCAFile
	}
	if c.Source != "" {
		return "provider.ca_file in " + c.Source
	}
	return "provider.ca_file"
}

// configPath returns the file to read, and the flag or variable that named
// it ("" if it is the optional default, in which case path may not exist).
func configPath(flags Flags, getenv func(string) string, home string) (path, explicit string, err error) {
	if flags.ConfigPath != nil {
		if *flags.ConfigPath == "" {
			return "", "", &FieldError{Source: "--" + flagConfig, Key: "config", Problem: "must not be empty"}
		}
		return *flags.ConfigPath, "--" + flagConfig, nil
	}
	if p := getenv(EnvConfig); p != "" {
		return p, EnvConfig, nil
	}
	var candidates []string
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		candidates = append(candidates, filepath.Join(x, "rebound", "config.toml"))
	}
	if home != "" {
		candidates = append(candidates, filepath.Join(home, ".config", "rebound", "config.toml"))
	}
	for _, c := range candidates {
		_, err := os.Stat(c)
		if err == nil {
			return c, "", nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
	}
	return "", "", nil
}

// stateHome is the XDG default state directory, "" if it can't be known.
// The XDG spec says a relative $XDG_STATE_HOME is to be ignored.
func stateHome(getenv func(string) string, home string) string {
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "rebound")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "state", "rebound")
}

// stateDirOrigin names where the state directory came from, given its
// origin ("" for the default), and what to do if it can't be written.
func stateDirOrigin(src string, getenv func(string) string) (from, fix string) {
	const choose = "make it writable, or choose another with --" + flagStateDir + ", " + EnvStateDir + " or state_dir in the config file"
	switch src {
	case "--" + flagStateDir:
		return "the --" + flagStateDir + " flag", "make it writable, or pass --" + flagStateDir + " a directory that is (the flag is in the command your editor starts Rebound with)"
	case EnvStateDir:
		return EnvStateDir, "make it writable, or set " + EnvStateDir + " to a directory that is, or unset it for the default ($XDG_STATE_HOME/rebound or ~/.local/state/rebound)"
	case "":
		x := getenv("XDG_STATE_HOME")
		switch {
		case filepath.IsAbs(x):
			return "the default, $XDG_STATE_HOME/rebound (XDG_STATE_HOME=" + x + ")", choose
		case x != "":
			return "the default, ~/.local/state/rebound (XDG_STATE_HOME=" + x + " is not an absolute path, so it is ignored)", choose
		}
		return "the default, ~/.local/state/rebound ($XDG_STATE_HOME is not set)", choose
	}
	// Otherwise the file that set state_dir.
	return "state_dir in " + src, "make it writable, or set state_dir in " + src + " to a directory that is, or remove it for the default"
}

// modelOrigin names where provider.model came from, given its origin (""
// for the default), in the terms of the place to change it.
func modelOrigin(src string) string {
	switch src {
	case "--" + flagModel:
		return "the --" + flagModel + " flag (in the command your editor starts Rebound with)"
	case EnvModel:
		return "the environment variable " + EnvModel
	case "":
		return "the default (" + defaultModel + "; set provider.model in the config file, " + EnvModel + " or --" + flagModel + ")"
	}
	return "provider.model in " + src
}

// attribute sets the Source of each *FieldError in err. A key with no
// recorded origin holds its default, which is valid on its own, so the file
// must have set the value it conflicts with (initial_delay vs max_delay).
func attribute(err error, origin map[string]string, file string) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if fe, ok := errors.AsType[*FieldError](e); ok && fe.Source == "" {
			fe.Source = origin[fe.Key]
			if fe.Source == "" {
				fe.Source = file
			}
		}
	}
	return errors.Join(errs...)
}

// maxConfigBytes bounds a config file: a few KiB of TOML.
const maxConfigBytes = 1 << 20

// readConfigFile reads the config file at path. The default file (found,
// not named) must be a regular file, a link to one included: a FIFO or
// device left at the default path would otherwise block every start. A
// file the user named is read as it is, so `--config <(…)` works.
func readConfigFile(path string, named bool) ([]byte, error) {
	var f *os.File
	var err error
	if named {
		f, err = os.Open(path)
	} else {
		f, err = regfile.Open(path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%s: larger than %d KiB, which no config file is", path, maxConfigBytes>>10)
	}
	return data, nil
}

// decodeFile decodes data into cfg over the defaults and records the file as
// the origin of every key it sets.
//
// The file is parsed twice: first into a map, to check keys and value types
// against Config ourselves, because the toml library's type errors are
// unstructured text and it matches keys case-insensitively; then into cfg,
// which can then fail only on a value's own syntax (a duration).
func decodeFile(path string, data []byte, cfg *Config, origin map[string]string) error {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		// Decoding into a map can fail only on syntax.
		if pe, ok := errors.AsType[toml.ParseError](err); ok {
			return &SyntaxError{Path: path, Err: pe}
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	if errs := checkShape(path, reflect.TypeFor[Config](), raw, nil); len(errs) > 0 {
		return errors.Join(errs...)
	}

	md, err := toml.Decode(string(data), cfg)
	if err != nil {
		// The shape is right, so this is a value's own syntax, reported by
		// UnmarshalText with the key it was decoding.
		if pe, ok := errors.AsType[toml.ParseError](err); ok && pe.LastKey != "" {
			return &FieldError{Source: path, Key: pe.LastKey, Problem: pe.Message}
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	// checkShape has already rejected unknown keys; this is the decoder's own
	// account, kept so a disagreement between the two can't drop a setting
	// silently.
	if und := md.Undecoded(); len(und) > 0 {
		var errs []error
		for _, k := range und {
			errs = append(errs, &FieldError{Source: path, Key: k.String(), Problem: "unknown key"})
		}
		return errors.Join(errs...)
	}
	for _, k := range md.Keys() {
		origin[k.String()] = path
	}
	return nil
}

// SyntaxError is a TOML file that does not parse. Its message has the
// "path:line:col: message" form that editors make clickable.
type SyntaxError struct {
	Path string
	Err  toml.ParseError
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Err.Position.Line, e.Err.Position.Col, e.Err.Message)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// checkShape compares the decoded table m with the struct type t: every key
// must name a field (exactly, unlike the decoder) and every value must have a
// TOML type the field accepts. It reports all problems, sorted by key.
func checkShape(path string, t reflect.Type, m map[string]any, prefix toml.Key) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(m)) {
		f, ok := fieldByKey(t, name)
		if !ok {
			key := append(slices.Clip(prefix), name)
			errs = append(errs, fieldError(path, key, "%s", unknownKey(t, name, prefix)))
			continue
		}
		errs = append(errs, checkValue(path, f.Type, m[name], prefix, name)...)
	}
	return errs
}

// fieldError is the problem of the value of key in the file path.
func fieldError(path string, key toml.Key, format string, args ...any) error {
	return &FieldError{Source: path, Key: keyString(key), Problem: fmt.Sprintf(format, args...)}
}

// checkValue checks v, the value of prefix.name, against its field's type
// ft, and what v holds against ft's parts.
func checkValue(path string, ft reflect.Type, v any, prefix toml.Key, name string) []error {
	key := append(slices.Clip(prefix), name)
	if want, ok := scalarWant(ft, v); want != "" {
		if ok {
			return nil
		}
		return []error{fieldError(path, key, "must be %s, got %s", want, describe(v))}
	}
	switch {
	case ft.Kind() == reflect.Struct:
		sub, ok := v.(map[string]any)
		if !ok {
			return []error{fieldError(path, key, "must be a table, got %s", describe(v))}
		}
		return checkShape(path, ft, sub, key)
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
		return checkTables(path, ft.Elem(), v, prefix, name)
	case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.String:
		return checkStringTable(path, v, key)
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
		return checkStrings(path, v, key)
	}
	// A field type this doesn't know is a bug here, not in the user's file.
	panic(fmt.Sprintf("config: checkShape: unsupported field type %s", ft))
}

// scalarWant is what a field of type ft takes when it takes one value
// ("" when it takes a table or an array), and whether v is one.
func scalarWant(ft reflect.Type, v any) (want string, ok bool) {
	switch {
	case reflect.PointerTo(ft).Implements(textUnmarshaler):
		_, ok = v.(string)
		return "a string such as \"500ms\"", ok
	case ft.Kind() == reflect.String:
		_, ok = v.(string)
		return "a string", ok
	case ft.Kind() == reflect.Int:
		_, ok = v.(int64)
		return "an integer", ok
	case ft.Kind() == reflect.Float64:
		switch v.(type) {
		case float64, int64:
			return "a number", true
		}
		return "a number", false
	case ft.Kind() == reflect.Bool:
		_, ok = v.(bool)
		return "true or false", ok
	}
	return "", false
}

// checkTables checks v, the value of prefix.name, as an array of tables of
// the struct type t.
func checkTables(path string, t reflect.Type, v any, prefix toml.Key, name string) []error {
	arr, ok := v.([]map[string]any)
	if !ok {
		key := append(slices.Clip(prefix), name)
		return []error{fieldError(path, key, "must be an array of tables ([[%s]]), got %s", keyString(key), describe(v))}
	}
	var errs []error
	for i, el := range arr {
		errs = append(errs, checkShape(path, t, el, append(slices.Clip(prefix), fmt.Sprintf("%s[%d]", name, i)))...)
	}
	return errs
}

// checkStringTable checks v, the value of key, as a table of strings. It
// names only the kind of a wrong value: a header's value may be a secret.
func checkStringTable(path string, v any, key toml.Key) []error {
	sub, ok := v.(map[string]any)
	if !ok {
		return []error{fieldError(path, key, "must be a table of strings, got %s", kindOf(v))}
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(sub)) {
		if _, ok := sub[k].(string); !ok {
			errs = append(errs, fieldError(path, append(slices.Clip(key), k), "must be a string, got %s", kindOf(sub[k])))
		}
	}
	return errs
}

// checkStrings checks v, the value of key, as an array of strings,
// reporting its first element that is not one.
func checkStrings(path string, v any, key toml.Key) []error {
	arr, ok := v.([]any)
	if !ok {
		return []error{fieldError(path, key, "must be an array of strings, got %s", describe(v))}
	}
	for i, el := range arr {
		if _, ok := el.(string); !ok {
			return []error{fieldError(path, key, "must be an array of strings, got %s at index %d", describe(el), i)}
		}
	}
	return nil
}

// indexedKey is how toml.Key quotes an element such as rules[0].
var indexedKey = regexp.MustCompile(`"([A-Za-z_]+\[[0-9]+\])"`)

// keyString writes a dotted key the way users read it: recovery.rules[0].match.
func keyString(k toml.Key) string {
	return indexedKey.ReplaceAllString(k.String(), "$1")
}

// fieldByKey finds the field of t whose toml tag is name.
func fieldByKey(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag != "-" && tag != "" && tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// unknownKey says that name is not a key of t, with a hint when the user
// probably meant something else. It never repeats the value, which might be
// a secret (api_key).
func unknownKey(t reflect.Type, name string, prefix toml.Key) string {
	if to, ok := renamedKeys[append(slices.Clone(prefix), name).String()]; ok {
		return "renamed: this key is now " + to + "; rename it in the file"
	}
	if len(prefix) == 1 && prefix[0] == "provider" && strings.Contains(strings.ToLower(name), "key") && name != "api_key_env" {
		return "unknown key; the API key is read from the environment variable named by provider.api_key_env (default " + defaultAPIKeyEnv + ")"
	}
	var known []string
	for f := range t.Fields() {
		if tag, _, _ := strings.Cut(f.Tag.Get("toml"), ","); tag != "" && tag != "-" {
			known = append(known, tag)
		}
	}
	what := "unknown key"
	if len(prefix) == 0 {
		what = "unknown key or table"
	}
	for _, k := range known {
		if text.EditDistance(strings.ToLower(name), k) <= 2 {
			return fmt.Sprintf("%s (did you mean %q?)", what, k)
		}
	}
	return fmt.Sprintf("%s; known keys are %s", what, strings.Join(known, ", "))
}

// renamedKeys are keys of earlier versions and their names now, so an old
// file stops start-up with the fix rather than a bare "unknown key".
var renamedKeys = map[string]string{
	// The deadline bounds recovery of one model request, not a whole turn
	// of many requests and tools.
	"recovery.turn_deadline": "recovery.request_deadline",
}

// describe names a decoded TOML value's type for messages, with the value
// for scalars so the user can find it.
// kindOf is describe without the value.
func kindOf(v any) string {
	d := describe(v)
	if k, _, ok := strings.Cut(d, " "); ok {
		switch k {
		case "string", "float", "boolean":
			return "a " + k
		case "integer":
			return "an integer"
		}
	}
	return d
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("float %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	default:
		return "a date or time"
	}
}
