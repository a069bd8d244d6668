package config_test

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/config"
)

// env is a fake environment for Load's getenv.
type env map[string]string

func (e env) get(k string) string { return e[k] }

func ptr(s string) *string { return &s }

// ignoreStateDirOrigin leaves where the state dir came from to
// TestLoad_StateDirHelp, so the tests of values need not spell it out.
var ignoreStateDirOrigin = cmpopts.IgnoreFields(config.Config{}, "StateDirFrom", "StateDirFix", "ModelFrom")

// writeFile writes content to dir/rel, creating directories, and returns the
// path.
func writeFile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantErr fails unless err's message contains every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Load() error = nil, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("Load() error = %q, want it to contain %q", err, p)
		}
	}
}

func TestLoad_Defaults(t *testing.T) {
	home := t.TempDir()
	got, err := config.Load(config.Flags{}, env{}.get, home)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := config.Default()
	want.StateDir = filepath.Join(home, ".local", "state", "rebound")
	if diff := cmp.Diff(want, got, ignoreStateDirOrigin); diff != "" {
		t.Errorf("Load() (-want +got):\n%s", diff)
	}
}

func TestLoad_NilGetenv(t *testing.T) {
	if _, err := config.Load(config.Flags{}, nil, t.TempDir()); err != nil {
		t.Fatalf("Load(nil getenv) error = %v", err)
	}
}

func TestLoad_Precedence(t *testing.T) {
	// Each setting has a file key, a variable and a flag; the table walks
	// every layer for each.
	type layer struct{ file, env, flag string }
	settings := []struct {
		name    string
		fileKey string // TOML line format, %s is the value
		envVar  string
		flag    func(*config.Flags, *string)
		get     func(config.Config) string
		values  layer
	}{
		{"base_url", "[provider]\nbase_url = %q\n", "OPENAI_BASE_URL",
			func(f *config.Flags, v *string) { f.BaseURL = v },
			func(c config.Config) string { return c.Provider.BaseURL },
			layer{"http://file.example/v1", "http://env.example/v1", "http://flag.example/v1"}},
		{"model", "[provider]\nmodel = %q\n", "REBOUND_MODEL",
			func(f *config.Flags, v *string) { f.Model = v },
			func(c config.Config) string { return c.Provider.Model },
			layer{"file-model", "env-model", "flag-model"}},
		{"state_dir", "state_dir = %q\n", "REBOUND_STATE_DIR",
			func(f *config.Flags, v *string) { f.StateDir = v },
			func(c config.Config) string { return c.StateDir },
			layer{"/file/state", "/env/state", "/flag/state"}},
		{"log_level", "log_level = %q\n", "REBOUND_LOG_LEVEL",
			func(f *config.Flags, v *string) { f.LogLevel = v },
			func(c config.Config) string { return c.LogLevel },
			layer{"debug", "warn", "error"}},
		{"streaming", "[agent]\nstreaming = %q\n", "REBOUND_STREAMING",
			func(f *config.Flags, v *string) { f.Streaming = v },
			func(c config.Config) string { return c.Agent.Streaming },
			layer{"held", "live", "held"}},
	}
	for _, s := range settings {
		for _, tt := range []struct {
			name                  string
			useFile, useEnv, flag bool
			want                  string
		}{
			{"file", true, false, false, s.values.file},
			{"env over file", true, true, false, s.values.env},
			{"flag over env and file", true, true, true, s.values.flag},
			{"flag over file", true, false, true, s.values.flag},
			{"env alone", false, true, false, s.values.env},
		} {
			t.Run(s.name+"/"+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				e := env{}
				var flags config.Flags
				if tt.useFile {
					e["REBOUND_CONFIG"] = writeFile(t, dir, "c.toml", strings.ReplaceAll(s.fileKey, "%q", `"`+s.values.file+`"`))
				}
				if tt.useEnv {
					e[s.envVar] = s.values.env
				}
				if tt.flag {
					s.flag(&flags, ptr(s.values.flag))
				}
				got, err := config.Load(flags, e.get, dir)
				if err != nil {
					t.Fatalf("Load() error = %v", err)
				}
				if g := s.get(got); g != tt.want {
					t.Errorf("%s = %q, want %q", s.name, g, tt.want)
				}
			})
		}
	}
}

func TestLoad_EmptyEnvIsUnset(t *testing.T) {
	got, err := config.Load(config.Flags{}, env{"REBOUND_MODEL": "", "OPENAI_BASE_URL": ""}.get, t.TempDir())
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	if got.Provider.Model != "gpt-4o-mini" || got.Provider.BaseURL != "https://api.openai.com/v1" {
		t.Errorf("Load() = %+v, want defaults for empty variables", got.Provider)
	}
}

func TestLoad_FullFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.toml", `
log_level = "warn"
state_dir = "/var/lib/rebound"

[provider]
base_url = "http://localhost:11434/v1"
api_key_env = "LOCAL_KEY"
model = "llama3"
max_tokens = 4096
continuation = "prefix"
context_window = 32768
stream_usage = "on"
price_input = 0.5
price_cached_input = 0.05
price_output = 1.5
currency = "EUR"
share_limits = true
limit_scope = "key"
pacing = false
max_in_flight = 2

[provider.headers]
X-Gateway-Key = "gw-secret"
"X-Tags" = "team=a, ci"

[recovery]
max_retries = 5
initial_delay = "1s"
max_delay = "30s"
jitter = 0
jitter_mode = "full"
max_retry_after = "1m"
retryable_codes = ["RATE_LIMIT", "UNKNOWN"]
request_deadline = "10m"
attempt_timeout = "2m"
first_token_timeout = "1m"
stream_idle_timeout = "30s"
fallback_model = "llama3-small"
overload_fallback_after = 2

[recovery.overflow]
enabled = false
keep_recent_messages = 4
compact_at = 0.75

[recovery.truncation]
escalated_max_tokens = 16384
max_continuations = 1

[[recovery.rules]]
match = "msg~quota exceeded"
delay = "30s"
max_retries = 1

[[recovery.rules]]
match = "code=insufficient_quota"
delay = "1m"
max_retries = 0

[agent]
streaming = "held"
max_steps = 20
instructions = "Answer in French."
replace_instructions = true
default_mode = "read_only"

[tools]
command_timeout = "30s"
max_command_timeout = "5m"
output_limit = 4096
`)
	got, err := config.Load(config.Flags{ConfigPath: &path}, env{"LOCAL_KEY": "k"}.get, dir)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := config.Config{
		Provider: config.Provider{
			BaseURL:   "http://localhost:11434/v1",
			APIKeyEnv: "LOCAL_KEY",
			Model:     "llama3",
			MaxTokens: 4096,
			APIKey:    "k",

			Continuation:     "prefix",
			ContextWindow:    32768,
			StreamUsage:      "on",
			PriceInput:       0.5,
			PriceCachedInput: 0.05,
			PriceOutput:      1.5,
			Currency:         "EUR",
			ShareLimits:      true,
			LimitScope:       "key",
			MaxInFlight:      2,
			Headers:          map[string]string{"X-Gateway-Key": "gw-secret", "X-Tags": "team=a, ci"},
		},
		Recovery: config.Recovery{
			MaxRetries:        5,
			InitialDelay:      config.Duration(time.Second),
			MaxDelay:          config.Duration(30 * time.Second),
			Jitter:            0,
			JitterMode:        "full",
			MaxRetryAfter:     config.Duration(time.Minute),
			RetryableCodes:    []string{"RATE_LIMIT", "UNKNOWN"},
			RequestDeadline:   config.Duration(10 * time.Minute),
			AttemptTimeout:    config.Duration(2 * time.Minute),
			FirstTokenTimeout: config.Duration(time.Minute),
			StreamIdleTimeout: config.Duration(30 * time.Second),

			FallbackModel:         "llama3-small",
			OverloadFallbackAfter: 2,
			Overflow:              config.Overflow{Enabled: false, KeepRecentMessages: 4, CompactAt: 0.75},
			Truncation:            config.Truncation{EscalatedMaxTokens: 16384, MaxContinuations: 1},
			Rules: []config.Rule{
				{Match: "msg~quota exceeded", Delay: config.Duration(30 * time.Second), MaxRetries: 1},
				{Match: "code=insufficient_quota", Delay: config.Duration(time.Minute), MaxRetries: 0},
			},
		},
		Agent:    config.Agent{Streaming: "held", MaxSteps: 20, Instructions: "Answer in French.", ReplaceInstructions: true, DefaultMode: "read_only", WaitStatus: "auto"},
		Tools:    config.Tools{CommandTimeout: config.Duration(30 * time.Second), MaxCommandTimeout: config.Duration(5 * time.Minute), OutputLimit: 4096},
		LogLevel: "warn",
		StateDir: "/var/lib/rebound",
		Source:   path,
	}
	if diff := cmp.Diff(want, got, ignoreStateDirOrigin); diff != "" {
		t.Errorf("Load() (-want +got):\n%s", diff)
	}
}

func TestLoad_PartialFileKeepsDefaults(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.toml", "[recovery]\nmax_retries = 0\n")
	got, err := config.Load(config.Flags{ConfigPath: &path}, env{}.get, dir)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := config.Default()
	want.Recovery.MaxRetries = 0
	want.StateDir = filepath.Join(dir, ".local", "state", "rebound")
	want.Source = path
	if diff := cmp.Diff(want, got, ignoreStateDirOrigin); diff != "" {
		t.Errorf("Load() (-want +got):\n%s", diff)
	}
}

// compact_at takes the ends of its range, 1 written as an integer too.
func TestLoad_CompactAtBounds(t *testing.T) {
	for text, want := range map[string]float64{"0": 0, "1": 1, "1.0": 1, "0.5": 0.5} {
		dir := t.TempDir()
		path := writeFile(t, dir, "c.toml", "[recovery.overflow]\ncompact_at = "+text+"\n")
		got, err := config.Load(config.Flags{ConfigPath: &path}, env{}.get, dir)
		if err != nil {
			t.Errorf("compact_at = %s: %v", text, err)
			continue
		}
		if got.Recovery.Overflow.CompactAt != want {
			t.Errorf("compact_at = %s loaded as %v, want %v", text, got.Recovery.Overflow.CompactAt, want)
		}
	}
}

func TestLoad_ExplicitConfigMissing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.toml")
	tests := []struct {
		name  string
		flags config.Flags
		env   env
		want  []string
	}{
		{"REBOUND_CONFIG", config.Flags{}, env{"REBOUND_CONFIG": missing}, []string{"REBOUND_CONFIG", missing}},
		{"--config", config.Flags{ConfigPath: &missing}, env{}, []string{"--config", missing}},
		{"--config over REBOUND_CONFIG", config.Flags{ConfigPath: &missing}, env{"REBOUND_CONFIG": writeFile(t, dir, "ok.toml", "")}, []string{"--config", missing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(tt.flags, tt.env.get, dir)
			wantErr(t, err, tt.want...)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Load() error = %v, want errors.Is(err, fs.ErrNotExist)", err)
			}
		})
	}
}

func TestLoad_EmptyConfigFlag(t *testing.T) {
	_, err := config.Load(config.Flags{ConfigPath: ptr("")}, env{}.get, t.TempDir())
	wantErr(t, err, "--config", "must not be empty")
}

func TestLoad_ConfigFileLocation(t *testing.T) {
	const model = "[provider]\nmodel = %q\n"
	file := func(m string) string { return strings.ReplaceAll(model, "%q", `"`+m+`"`) }
	tests := []struct {
		name      string
		files     map[string]string // relative to the temp dir, which is also home
		env       map[string]string // values may use $DIR
		wantModel string
		wantSrc   string // relative; "" means none
	}{
		{
			name:      "none",
			wantModel: "gpt-4o-mini",
		},
		{
			name:      "home default",
			files:     map[string]string{".config/rebound/config.toml": file("home")},
			wantModel: "home",
			wantSrc:   ".config/rebound/config.toml",
		},
		{
			name: "XDG_CONFIG_HOME first",
			files: map[string]string{
				".config/rebound/config.toml": file("home"),
				"xdg/rebound/config.toml":     file("xdg"),
			},
			env:       map[string]string{"XDG_CONFIG_HOME": "$DIR/xdg"},
			wantModel: "xdg",
			wantSrc:   "xdg/rebound/config.toml",
		},
		{
			name:      "XDG_CONFIG_HOME without a file falls back to home",
			files:     map[string]string{".config/rebound/config.toml": file("home")},
			env:       map[string]string{"XDG_CONFIG_HOME": "$DIR/xdg"},
			wantModel: "home",
			wantSrc:   ".config/rebound/config.toml",
		},
		{
			name:      "relative XDG_CONFIG_HOME is ignored",
			files:     map[string]string{"xdg/rebound/config.toml": file("xdg")},
			env:       map[string]string{"XDG_CONFIG_HOME": "xdg"},
			wantModel: "gpt-4o-mini",
		},
		{
			name: "REBOUND_CONFIG over the default",
			files: map[string]string{
				".config/rebound/config.toml": file("home"),
				"other.toml":                  file("other"),
			},
			env:       map[string]string{"REBOUND_CONFIG": "$DIR/other.toml"},
			wantModel: "other",
			wantSrc:   "other.toml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, content := range tt.files {
				writeFile(t, dir, rel, content)
			}
			e := env{}
			for k, v := range tt.env {
				e[k] = strings.ReplaceAll(v, "$DIR", dir)
			}
			got, err := config.Load(config.Flags{}, e.get, dir)
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			wantSrc := ""
			if tt.wantSrc != "" {
				wantSrc = filepath.Join(dir, tt.wantSrc)
			}
			if got.Provider.Model != tt.wantModel || got.Source != wantSrc {
				t.Errorf("Load() model, source = %q, %q; want %q, %q", got.Provider.Model, got.Source, tt.wantModel, wantSrc)
			}
		})
	}
}

func TestLoad_StateDir(t *testing.T) {
	tests := []struct {
		name string
		env  env
		home string
		want string
	}{
		{"home", env{}, "/home/u", "/home/u/.local/state/rebound"},
		{"XDG_STATE_HOME", env{"XDG_STATE_HOME": "/xdg/state"}, "/home/u", "/xdg/state/rebound"},
		{"relative XDG_STATE_HOME is ignored", env{"XDG_STATE_HOME": "rel"}, "/home/u", "/home/u/.local/state/rebound"},
		{"XDG_STATE_HOME without home", env{"XDG_STATE_HOME": "/xdg/state"}, "", "/xdg/state/rebound"},
		{"REBOUND_STATE_DIR without home", env{"REBOUND_STATE_DIR": "/s"}, "", "/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Load(config.Flags{}, tt.env.get, tt.home)
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			if got.StateDir != tt.want {
				t.Errorf("StateDir = %q, want %q", got.StateDir, tt.want)
			}
		})
	}
}

// An unwritable state dir is reported with where its path came from and
// what to do there (issue #17): a default was blamed on REBOUND_STATE_DIR,
// which the user never set.
func TestLoad_StateDirHelp(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "c.toml", "state_dir = \"/from/file\"\n")
	emptyFile := writeFile(t, dir, "empty.toml", "state_dir = \"\"\n")
	const choose = ": make it writable, or choose another with --state-dir, REBOUND_STATE_DIR or state_dir in the config file"
	tests := []struct {
		name  string
		env   env
		flags config.Flags
		want  string
	}{
		{"default under home", env{}, config.Flags{},
			"the state directory /home/u/.local/state/rebound comes from the default, ~/.local/state/rebound ($XDG_STATE_HOME is not set)" + choose},
		{"default under XDG_STATE_HOME", env{"XDG_STATE_HOME": "/xdg"}, config.Flags{},
			"the state directory /xdg/rebound comes from the default, $XDG_STATE_HOME/rebound (XDG_STATE_HOME=/xdg)" + choose},
		{"default, relative XDG_STATE_HOME", env{"XDG_STATE_HOME": "rel"}, config.Flags{},
			"the state directory /home/u/.local/state/rebound comes from the default, ~/.local/state/rebound (XDG_STATE_HOME=rel is not an absolute path, so it is ignored)" + choose},
		{"REBOUND_STATE_DIR", env{"REBOUND_STATE_DIR": "/from/env"}, config.Flags{},
			"the state directory /from/env comes from REBOUND_STATE_DIR: make it writable, or set REBOUND_STATE_DIR to a directory that is, or unset it for the default ($XDG_STATE_HOME/rebound or ~/.local/state/rebound)"},
		{"--state-dir over REBOUND_STATE_DIR", env{"REBOUND_STATE_DIR": "/from/env"}, config.Flags{StateDir: ptr("/from/flag")},
			"the state directory /from/flag comes from the --state-dir flag: make it writable, or pass --state-dir a directory that is (the flag is in the command your editor starts Rebound with)"},
		{"state_dir in the file", env{}, config.Flags{ConfigPath: &file},
			"the state directory /from/file comes from state_dir in " + file + ": make it writable, or set state_dir in " + file + " to a directory that is, or remove it for the default"},
		{"REBOUND_STATE_DIR over the file", env{"REBOUND_STATE_DIR": "/from/env"}, config.Flags{ConfigPath: &file},
			"the state directory /from/env comes from REBOUND_STATE_DIR: make it writable, or set REBOUND_STATE_DIR to a directory that is, or unset it for the default ($XDG_STATE_HOME/rebound or ~/.local/state/rebound)"},
		{"state_dir = \"\" in the file is the default", env{}, config.Flags{ConfigPath: &emptyFile},
			"the state directory /home/u/.local/state/rebound comes from the default, ~/.local/state/rebound ($XDG_STATE_HOME is not set)" + choose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Load(tt.flags, tt.env.get, "/home/u")
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			if h := got.StateDirHelp(); h != tt.want {
				t.Errorf("StateDirHelp() =\n  %s\nwant\n  %s", h, tt.want)
			}
		})
	}
	if got, want := (config.Config{StateDir: "/s"}).StateDirHelp(), "the state directory is /s"; got != want {
		t.Errorf("StateDirHelp() of a Config not from Load = %q, want %q", got, want)
	}
}

func TestLoad_NoStateDir(t *testing.T) {
	_, err := config.Load(config.Flags{}, env{}.get, "")
	wantErr(t, err, "state_dir", "REBOUND_STATE_DIR", "--state-dir", "state_dir in the config file")
}

func TestLoad_FileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		wantKey string
		wantMsg string
	}{
		{"unknown key", "[provider]\nmodle = \"x\"\n", "provider.modle", `unknown key (did you mean "model"?)`},
		{"key in wrong case", "[provider]\nModel = \"x\"\n", "provider.Model", "unknown key"},
		{"unknown table", "[providers]\nmodel = \"x\"\n", "providers", "unknown key or table"},
		{"unknown top-level key", "verbose = true\n", "verbose", "unknown key or table; known keys are provider, recovery, agent, tools, log_level, state_dir"},
		{"unknown nested table", "[provider.extra]\na = 1\n", "provider.extra", "unknown key"},
		{"unknown recovery key", "[recovery]\nretries = 3\n", "recovery.retries", "unknown key"},
		{"table is a string", "provider = \"x\"\n", "provider", `must be a table, got string "x"`},
		{"array of tables", "[[provider]]\nmodel = \"x\"\n", "provider", "must be a table, got an array of tables"},
		{"max_tokens negative", "[provider]\nmax_tokens = -5\n", "provider.max_tokens", "must be a positive integer, got -5"},
		{"max_tokens string", "[provider]\nmax_tokens = \"x\"\n", "provider.max_tokens", `must be an integer, got string "x"`},
		{"max_tokens float", "[provider]\nmax_tokens = 1.5\n", "provider.max_tokens", "must be an integer, got float 1.5"},
		{"max_tokens too big", "[provider]\nmax_tokens = 2000000\n", "provider.max_tokens", "must be at most 1000000, got 2000000"},
		{"model not a string", "[provider]\nmodel = 4\n", "provider.model", "must be a string, got integer 4"},
		{"empty model", "[provider]\nmodel = \"\"\n", "provider.model", "must not be empty"},
		{"jitter 2", "[recovery]\njitter = 2\n", "recovery.jitter", "must be between 0 and 1, got 2"},
		{"jitter string", "[recovery]\njitter = \"0.1\"\n", "recovery.jitter", "must be a number"},
		{"jitter_mode unknown", "[recovery]\njitter_mode = \"fast\"\n", "recovery.jitter_mode", `must be one of proportional, full, got "fast"`},
		{"jitter_mode empty", "[recovery]\njitter_mode = \"\"\n", "recovery.jitter_mode", `must be one of proportional, full, got ""`},
		{"max_retries negative", "[recovery]\nmax_retries = -1\n", "recovery.max_retries", "got -1"},
		{"initial_delay above max_delay", "[recovery]\ninitial_delay = \"20s\"\nmax_delay = \"10s\"\n", "recovery.initial_delay", "must not exceed recovery.max_delay (10s), got 20s"},
		{"max_delay below default initial_delay", "[recovery]\nmax_delay = \"100ms\"\n", "recovery.initial_delay", "must not exceed recovery.max_delay (100ms), got 500ms"},
		{"bad duration", "[recovery]\nrequest_deadline = \"5 parsecs\"\n", "recovery.request_deadline", `must be a duration such as "500ms" or "1m30s", got "5 parsecs"`},
		{"renamed key", "[recovery]\nturn_deadline = \"5m\"\n", "recovery.turn_deadline", "renamed: this key is now recovery.request_deadline; rename it in the file"},
		{"duration as integer", "[recovery]\ninitial_delay = 500\n", "recovery.initial_delay", "must be a string such as \"500ms\", got integer 500"},
		{"negative duration", "[recovery]\nmax_delay = \"-1s\"\n", "recovery.max_delay", "must be a positive duration, got -1s"},
		{"zero first_token_timeout", "[recovery]\nfirst_token_timeout = \"0s\"\n", "recovery.first_token_timeout", "must be a positive duration"},
		{"unknown retryable code", "[recovery]\nretryable_codes = [\"SERVER\", \"FLAKY\"]\n", "recovery.retryable_codes", `unknown code "FLAKY"`},
		{"lower-case retryable code", "[recovery]\nretryable_codes = [\"server\"]\n", "recovery.retryable_codes", `unknown code "server"`},
		{"repeated retryable code", "[recovery]\nretryable_codes = [\"SERVER\", \"TIMEOUT\", \"SERVER\"]\n", "recovery.retryable_codes", `code "SERVER" is listed more than once`},
		{"retryable codes not strings", "[recovery]\nretryable_codes = [\"SERVER\", 5]\n", "recovery.retryable_codes", "must be an array of strings, got integer 5 at index 1"},
		{"retryable codes a string", "[recovery]\nretryable_codes = \"SERVER\"\n", "recovery.retryable_codes", "must be an array of strings"},
		{"bad api_key_env", "[provider]\napi_key_env = \"MY-KEY\"\n", "provider.api_key_env", "must be the name of an environment variable"},
		{"api_key_env starts with digit", "[provider]\napi_key_env = \"1KEY\"\n", "provider.api_key_env", "not the key itself"},
		{"ftp base_url", "[provider]\nbase_url = \"ftp://x\"\n", "provider.base_url", `must be an absolute http or https URL, got "ftp://x"`},
		{"base_url not a url", "[provider]\nbase_url = \"not a url\"\n", "provider.base_url", `must be an absolute http or https URL, got "not a url"`},
		{"relative base_url", "[provider]\nbase_url = \"/v1\"\n", "provider.base_url", "absolute http or https URL"},
		{"bad log_level", "log_level = \"loud\"\n", "log_level", `must be one of debug, info, warn, error, got "loud"`},
		{"relative state_dir", "state_dir = \"state\"\n", "state_dir", "must be an absolute path"},
		{"overload_fallback_after zero", "[recovery]\noverload_fallback_after = 0\n", "recovery.overload_fallback_after", "must be a positive integer, got 0"},
		{"overflow enabled not a bool", "[recovery.overflow]\nenabled = \"yes\"\n", "recovery.overflow.enabled", `must be true or false, got string "yes"`},
		{"keep_recent_messages negative", "[recovery.overflow]\nkeep_recent_messages = -1\n", "recovery.overflow.keep_recent_messages", "got -1"},
		{"compact_at a percentage", "[recovery.overflow]\ncompact_at = 90\n", "recovery.overflow.compact_at", "at most 1 (0.9 is 90%), or 0 to turn it off, got 90"},
		{"compact_at negative", "[recovery.overflow]\ncompact_at = -0.5\n", "recovery.overflow.compact_at", "got -0.5"},
		{"compact_at nan", "[recovery.overflow]\ncompact_at = nan\n", "recovery.overflow.compact_at", "got NaN"},
		{"compact_at a string", "[recovery.overflow]\ncompact_at = \"90%\"\n", "recovery.overflow.compact_at", `must be a number, got string "90%"`},
		{"escalated_max_tokens zero", "[recovery.truncation]\nescalated_max_tokens = 0\n", "recovery.truncation.escalated_max_tokens", "must be between 1 and 1000000, got 0"},
		{"max_continuations too many", "[recovery.truncation]\nmax_continuations = 50\n", "recovery.truncation.max_continuations", "must be between 0 and 20, got 50"},
		{"rules not an array of tables", "[recovery]\nrules = \"429\"\n", "recovery.rules", "must be an array of tables ([[recovery.rules]])"},
		{"rule unknown key", "[[recovery.rules]]\nmatch = \"429\"\ndelay = \"1s\"\nretries = 2\n", "recovery.rules[0].retries", "unknown key"},
		{"rule bad match", "[[recovery.rules]]\nmatch = \"sometimes\"\ndelay = \"1s\"\n", "recovery.rules[0].match", `match "sometimes" is none of`},
		{"rule empty msg~", "[[recovery.rules]]\nmatch = \"msg~\"\ndelay = \"1s\"\n", "recovery.rules[0].match", "msg~ needs a substring"},
		{"rule delay too short", "[[recovery.rules]]\nmatch = \"429\"\ndelay = \"10ms\"\n", "recovery.rules[0].delay", "must be between 100ms and 1h, got 10ms"},
		{"rule delay missing", "[[recovery.rules]]\nmatch = \"429\"\n", "recovery.rules[0].delay", "must be between 100ms and 1h, got 0s"},
		{"rule max_retries too many", "[[recovery.rules]]\nmatch = \"RATE_LIMIT\"\ndelay = \"1s\"\nmax_retries = 5000\n", "recovery.rules[0].max_retries", "must be between 0 and 1000, got 5000"},
		{"headers not a table", "[provider]\nheaders = \"X-Key: 123\"\n", "provider.headers", "must be a table of strings, got a string"},
		{"header value not a string", "[provider.headers]\nX-Key = 12345678\n", "provider.headers.X-Key", "must be a string, got an integer"},
		{"header value with a line break", "[provider.headers]\nX-Key = \"abc\\r\\nX-Evil: 1\"\n", "provider.headers.X-Key", "must be a header value"},
		{"max_in_flight string", "[provider]\nmax_in_flight = \"2\"\n", "provider.max_in_flight", "must be an integer"},
		{"second rule bad action", "[[recovery.rules]]\nmatch = \"429\"\ndelay = \"1s\"\n[[recovery.rules]]\nmatch = \"400\"\ndelay = \"1s\"\naction = \"pray\"\n", "recovery.rules[1].action", `must be retry or strip_images, got "pray"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "config.toml", tt.content)
			_, err := config.Load(config.Flags{ConfigPath: &path}, env{}.get, dir)
			wantErr(t, err, path+": "+tt.wantKey+": ", tt.wantMsg)
			fe, ok := errors.AsType[*config.FieldError](err)
			if !ok {
				t.Fatalf("Load() error = %v, want a *config.FieldError", err)
			}
			if diff := cmp.Diff(config.FieldError{Source: path, Key: tt.wantKey, Problem: fe.Problem}, *fe); diff != "" {
				t.Errorf("FieldError (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad_FileErrorsAllReported(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.toml", "[provider]\nmodle = \"x\"\nmax_tokens = \"x\"\n[extra]\n")
	_, err := config.Load(config.Flags{ConfigPath: &path}, env{}.get, dir)
	wantErr(t, err, path+": provider.modle:", path+": provider.max_tokens:", path+": extra:")
}

func TestLoad_DefaultFileErrorNamesIt(t *testing.T) {
	home := t.TempDir()
	path := writeFile(t, home, ".config/rebound/config.toml", "[provider]\nmax_tokens = -5\n")
	_, err := config.Load(config.Flags{}, env{}.get, home)
	wantErr(t, err, path+": provider.max_tokens: must be a positive integer, got -5")
}

func TestLoad_SyntaxError(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.toml", "[provider]\nmodel = \"x\"\nmax_tokens = = 5\n")
	_, err := config.Load(config.Flags{ConfigPath: &path}, env{}.get, dir)
	wantErr(t, err, path+":3:")
	pe, ok := errors.AsType[toml.ParseError](err)
	if !ok {
		t.Fatalf("Load() error = %v, want it to wrap a toml.ParseError", err)
	}
	if pe.Position.Line != 3 || pe.Position.Col == 0 {
		t.Errorf("ParseError position = %+v, want line 3 and a column", pe.Position)
	}
	wantErr(t, err, path+":3:"+strconv.Itoa(pe.Position.Col)+": ")
}

func TestLoad_EnvAndFlagErrors(t *testing.T) {
	tests := []struct {
		name  string
		env   env
		flags config.Flags
		want  string
	}{
		{"OPENAI_BASE_URL not a url", env{"OPENAI_BASE_URL": "not a url"}, config.Flags{}, `OPENAI_BASE_URL: provider.base_url: must be an absolute http or https URL, got "not a url"`},
		{"OPENAI_BASE_URL ftp", env{"OPENAI_BASE_URL": "ftp://x"}, config.Flags{}, "OPENAI_BASE_URL: provider.base_url:"},
		{"--base-url", env{}, config.Flags{BaseURL: ptr("x")}, "--base-url: provider.base_url:"},
		{"--base-url beats a bad env", env{"OPENAI_BASE_URL": "ok?"}, config.Flags{BaseURL: ptr("nope")}, `--base-url: provider.base_url: must be an absolute http or https URL, got "nope"`},
		{"--model empty", env{}, config.Flags{Model: ptr("")}, "--model: provider.model: must not be empty"},
		{"REBOUND_LOG_LEVEL", env{"REBOUND_LOG_LEVEL": "trace"}, config.Flags{}, `REBOUND_LOG_LEVEL: log_level: must be one of debug, info, warn, error, got "trace"`},
		{"--log-level", env{}, config.Flags{LogLevel: ptr("DEBUG")}, "--log-level: log_level:"},
		{"REBOUND_STATE_DIR relative", env{"REBOUND_STATE_DIR": "rel"}, config.Flags{}, "REBOUND_STATE_DIR: state_dir: must be an absolute path"},
		{"--state-dir empty", env{}, config.Flags{StateDir: ptr("")}, "--state-dir: state_dir: must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(tt.flags, tt.env.get, t.TempDir())
			wantErr(t, err, tt.want)
		})
	}
}

func TestLoad_APIKey(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		env     env
		wantEnv string
		wantKey string
	}{
		{"default variable", "", env{"OPENAI_API_KEY": "sk-default"}, "OPENAI_API_KEY", "sk-default"},
		{"custom variable", "[provider]\napi_key_env = \"GROQ_API_KEY\"\n", env{"GROQ_API_KEY": "gsk-1", "OPENAI_API_KEY": "sk-other"}, "GROQ_API_KEY", "gsk-1"},
		{"unset is not an error", "[provider]\napi_key_env = \"GROQ_API_KEY\"\n", env{"OPENAI_API_KEY": "sk-other"}, "GROQ_API_KEY", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.env["REBOUND_CONFIG"] = writeFile(t, dir, "c.toml", tt.file)
			got, err := config.Load(config.Flags{}, tt.env.get, dir)
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			if got.Provider.APIKeyEnv != tt.wantEnv || got.Provider.APIKey != tt.wantKey {
				t.Errorf("APIKeyEnv, APIKey = %q, %q; want %q, %q", got.Provider.APIKeyEnv, got.Provider.APIKey, tt.wantEnv, tt.wantKey)
			}
		})
	}
}

func TestLoad_APIKeyNeverLeaks(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	tests := []struct {
		name  string
		file  string
		env   env
		flags config.Flags
	}{
		{"key in the file", "[provider]\napi_key = \"" + secret + "\"\n", env{}, config.Flags{}},
		{"key as api_key_env", "[provider]\napi_key_env = \"" + secret + "\"\n", env{}, config.Flags{}},
		{"bad file value", "[provider]\nmax_tokens = -5\n", env{}, config.Flags{}},
		{"syntax error", "[provider\n", env{}, config.Flags{}},
		{"bad env", "", env{"OPENAI_BASE_URL": "nope", "REBOUND_LOG_LEVEL": "x"}, config.Flags{}},
		{"bad flag", "", env{}, config.Flags{Model: ptr(""), StateDir: ptr("rel")}},
		{"bad base URL with the key as password", "", env{}, config.Flags{BaseURL: ptr("ftp://u:" + secret + "@h")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.env["OPENAI_API_KEY"] = secret
			tt.env["REBOUND_CONFIG"] = writeFile(t, dir, "c.toml", tt.file)
			_, err := config.Load(tt.flags, tt.env.get, dir)
			if err == nil {
				t.Fatal("Load() error = nil, want an error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Load() error = %q, leaks the API key", err)
			}
		})
	}

	t.Run("unknown api_key names the variable", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "c.toml", "[provider]\napi_key = \""+secret+"\"\n")
		_, err := config.Load(config.Flags{ConfigPath: &path}, env{}.get, dir)
		wantErr(t, err, path+": provider.api_key: unknown key", "provider.api_key_env")
	})

	t.Run("loaded config prints without it", func(t *testing.T) {
		cfg, err := config.Load(config.Flags{}, env{"OPENAI_API_KEY": secret}.get, t.TempDir())
		if err != nil {
			t.Fatalf("Load() error = %v", err)
		}
		if cfg.Provider.APIKey != secret {
			t.Fatalf("APIKey not loaded")
		}
		for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
			if got := fmt.Sprintf(format, cfg); strings.Contains(got, secret) {
				t.Errorf("Sprintf(%q, cfg) = %s, leaks the API key", format, got)
			}
		}
	})
}

func TestRegisterFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want config.Flags
	}{
		{"none", nil, config.Flags{}},
		{"some", []string{"--model", "m", "--log-level=debug"}, config.Flags{Model: ptr("m"), LogLevel: ptr("debug")}},
		{"all", []string{"-base-url", "http://h", "--model", "m", "--state-dir", "/s", "--config", "/c.toml", "--log-level", "warn", "--streaming", "held"},
			config.Flags{BaseURL: ptr("http://h"), Model: ptr("m"), StateDir: ptr("/s"), ConfigPath: ptr("/c.toml"), LogLevel: ptr("warn"), Streaming: ptr("held")}},
		{"explicitly empty", []string{"--model="}, config.Flags{Model: ptr("")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("rebound", flag.ContinueOnError)
			get := config.RegisterFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, get()); diff != "" {
				t.Errorf("Flags (-want +got):\n%s", diff)
			}
		})
	}
}

// A proxy variable that is no URL stops the start naming the variable (not
// its password), as a bad setting does: dropped, as Go's own proxy
// reading drops it, the requests would leave without the proxy.
func TestLoad_BadProxyVariable(t *testing.T) {
	for _, tt := range []struct{ name, value string }{
		{"HTTPS_PROXY", "http://user:s3cret@proxy%zz:3128"},
		{"http_proxy", "http://user:s3cret@proxy corp:3128"},
		{"HTTP_PROXY", "ftp://proxy.corp"},
	} {
		_, err := config.Load(config.Flags{}, env{tt.name: tt.value, "OPENAI_API_KEY": "k"}.get, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tt.name) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Load with %s=%q: %v, want an error naming %s without the password", tt.name, tt.value, err, tt.name)
		}
	}
	if _, err := config.Load(config.Flags{}, env{"HTTPS_PROXY": "proxy.corp:3128", "OPENAI_API_KEY": "k"}.get, t.TempDir()); err != nil {
		t.Errorf("Load with HTTPS_PROXY=proxy.corp:3128: %v", err)
	}
}
