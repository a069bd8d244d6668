// Package config resolves Rebound's settings from built-in defaults, an optional
// TOML file, environment variables and command-line flags, in that order of
// increasing precedence, and validates the result.
//
// Every error names where the bad value came from (the file, the environment
// variable or the flag) and the dotted key it sets, so a user editing
// config.toml in an editor that only shows the agent's stderr can still find
// the line to fix. The provider's API key is read from the environment, else
// from the credentials file `rebound login` writes (credentials.go), never
// from the config file, and never appears in an error or in the output of
// String or GoString.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// Config is the resolved configuration. The toml and json tags are the file's
// key names; a JSON Schema of the file is generated from them.
type Config struct {
	Provider Provider `toml:"provider" json:"provider" jsonschema_description:"The OpenAI-compatible model provider."`
	Recovery Recovery `toml:"recovery" json:"recovery" jsonschema_description:"How failed provider requests are retried and timed out."`
	Agent    Agent    `toml:"agent" json:"agent" jsonschema_description:"The agent loop: steps per turn and instructions."`
	Tools    Tools    `toml:"tools" json:"tools" jsonschema_description:"The tools the model may call."`
	LogLevel string   `toml:"log_level" json:"log_level" jsonschema:"enum=debug,enum=info,enum=warn,enum=error,default=info" jsonschema_description:"Minimum level of the log written to stderr: debug, info, warn or error. Default info. Overridden by REBOUND_LOG_LEVEL and --log-level."`
	StateDir string   `toml:"state_dir" json:"state_dir" jsonschema_description:"Absolute path of the directory holding session logs. Default $XDG_STATE_HOME/rebound, else ~/.local/state/rebound. Overridden by REBOUND_STATE_DIR and --state-dir."`

	// Source is the path of the file that was read, "" if none; it is
	// bookkeeping, not a setting.
	Source string `toml:"-" json:"-"`

	// StateDirFrom says where StateDir came from ("the --state-dir flag",
	// "REBOUND_STATE_DIR", "state_dir in FILE" or the default), and
	// StateDirFix what to do when Rebound can't write there, in that
	// source's terms: blaming REBOUND_STATE_DIR for a default the user
	// never set sends them to the wrong place. Load sets both; see
	// StateDirHelp.
	StateDirFrom string `toml:"-" json:"-"`
	StateDirFix  string `toml:"-" json:"-"`

	// ModelFrom says where Provider.Model came from ("the --model flag
	// ...", "REBOUND_MODEL", "provider.model in FILE" or the default), so
	// a provider's "no such model" can send the user to the right place.
	ModelFrom string `toml:"-" json:"-"`
}

// StateDirHelp is the sentence to add to an error about a state directory
// Rebound can't use: the directory, where it came from and what to do.
func (c Config) StateDirHelp() string {
	if c.StateDirFrom == "" { // not from Load
		return "the state directory is " + c.StateDir
	}
	return "the state directory " + c.StateDir + " comes from " + c.StateDirFrom + ": " + c.StateDirFix
}

// Provider describes the model provider.
type Provider struct {
	BaseURL   string `toml:"base_url" json:"base_url" jsonschema:"format=uri,default=https://api.openai.com/v1" jsonschema_description:"Absolute http(s) URL of the OpenAI-compatible API, up to and including the version path. Default https://api.openai.com/v1. Overridden by OPENAI_BASE_URL and --base-url."`
	APIKeyEnv string `toml:"api_key_env" json:"api_key_env" jsonschema:"pattern=^[A-Za-z_][A-Za-z0-9_]*$,default=OPENAI_API_KEY" jsonschema_description:"Name of the environment variable holding the API key; the key itself is never read from this file. Default OPENAI_API_KEY."`
	Model     string `toml:"model" json:"model" jsonschema:"minLength=1,default=gpt-4o-mini" jsonschema_description:"Model name sent to the provider. Default gpt-4o-mini. Overridden by REBOUND_MODEL and --model."`
	MaxTokens int    `toml:"max_tokens" json:"max_tokens" jsonschema:"minimum=1,maximum=1000000,default=8192" jsonschema_description:"Output token budget of one request, 1 to 1000000. Default 8192."`
	// Models and ReasoningEffort feed the editor's pickers.
	Models          []string `toml:"models" json:"models,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"Model names the editor's model picker offers when the provider's GET /models cannot be had (it is asked first). provider.model is always offered. Default none."`
	ReasoningEffort string   `toml:"reasoning_effort" json:"reasoning_effort" jsonschema:"enum=,enum=low,enum=medium,enum=high,default=" jsonschema_description:"Reasoning effort asked of the model (sent as reasoning_effort): low, medium or high; empty leaves it to the provider. The editor's thought-level picker changes it per session; setting it also offers that picker for models Rebound does not know take it (it knows OpenAI's o-series and gpt-5). Default empty."`
	Continuation    string   `toml:"continuation" json:"continuation" jsonschema:"enum=auto,enum=prefix,enum=prompt,default=auto" jsonschema_description:"How a reply that was cut off (the stream broke after text was shown, or the output limit was reached) is continued. auto: in place (the partial reply is sent as the last, assistant message with prefix: true and the model goes on with it) for DeepSeek's beta endpoint (https://api.deepseek.com/beta) and Mistral (api.mistral.ai), and elsewhere with a user message asking the model to continue. prefix: in place for any base URL. prompt: always with the user message. Default auto."`
	// Usage accounting for the editor's usage_update (context fill, cost).
	ContextWindow    int     `toml:"context_window" json:"context_window" jsonschema:"minimum=0,maximum=100000000,default=0" jsonschema_description:"The model's context window in tokens, shown to the editor with the tokens in use (usage_update). 0: what the provider's model list says, else Rebound's table of well-known models, and no usage is shown for a model neither knows. Default 0."`
	StreamUsage      string  `toml:"stream_usage" json:"stream_usage" jsonschema:"enum=auto,enum=on,enum=off,default=auto" jsonschema_description:"Whether requests ask for the token usage at the end of the stream (stream_options.include_usage), which some OpenAI-compatible servers refuse. auto: for api.openai.com, api.deepseek.com, openrouter.ai, api.groq.com, api.mistral.ai, api.together.xyz, generativelanguage.googleapis.com and localhost; elsewhere the usage is estimated. on, off: for any base URL. Default auto."`
	PriceInput       float64 `toml:"price_input" json:"price_input" jsonschema:"minimum=0,default=0" jsonschema_description:"Price of a million input (prompt) tokens, in provider.currency, for the session cost shown to the editor when the provider bills none itself. All three prices 0: no cost is shown. Default 0."`
	PriceCachedInput float64 `toml:"price_cached_input" json:"price_cached_input" jsonschema:"minimum=0,default=0" jsonschema_description:"Price of a million input tokens served from the provider's prompt cache; 0 prices them as provider.price_input. Default 0."`
	PriceOutput      float64 `toml:"price_output" json:"price_output" jsonschema:"minimum=0,default=0" jsonschema_description:"Price of a million output (completion) tokens, in provider.currency. Default 0."`
	Currency         string  `toml:"currency" json:"currency" jsonschema:"pattern=^[A-Z]{3}$,default=USD" jsonschema_description:"ISO 4217 code of the currency of the prices and of a cost the provider bills. Default USD."`
	// The provider's limit, shared by every chat and process (package ratelimit).
	ShareLimits bool    `toml:"share_limits" json:"share_limits" jsonschema:"default=true" jsonschema_description:"Share what the provider's responses say of its rate limit (a 429's wait, remaining counts reaching 0) between every chat of this Rebound and every Rebound using the same state directory, so that once one learns the limit is exhausted the others wait for its reset instead of being refused too. A bucket is the base URL, the key (a fingerprint of it; the key is never written) and, per provider.limit_scope, the model. false: each request learns the limit on its own. Default true."`
	LimitScope  string  `toml:"limit_scope" json:"limit_scope" jsonschema:"enum=model,enum=key,default=model" jsonschema_description:"What one provider limit covers. model: each model has its own (OpenAI, Anthropic, Groq and Gemini count per model). key: every model shares the key's (OpenRouter, a LiteLLM virtual key). Default model."`
	Pacing      bool    `toml:"pacing" json:"pacing" jsonschema:"default=true" jsonschema_description:"When the provider's x-ratelimit-remaining-requests (or the like) says few requests are left before the reset (under a quarter of the limit, when the provider says its size), spread them evenly over the time to the reset instead of spending them at once; a wait under 250 ms is not made, so it never slows more than 4 requests a second. Needs share_limits. Default true."`
	MaxInFlight int     `toml:"max_in_flight" json:"max_in_flight" jsonschema:"minimum=0,maximum=1000,default=0" jsonschema_description:"Most requests in flight at once to one provider bucket, across the chats of this Rebound and every Rebound using the same state directory, 0 to 1000, for accounts with a low concurrency limit; a request waits (cancellably) for a free slot. 0: no cap. Needs share_limits. Default 0."`
	Headers     Headers `toml:"headers" json:"headers,omitempty" jsonschema_description:"Extra HTTP headers sent with every provider request, e.g. a gateway's key or tags (\"X-Gateway-Key\" = \"...\"). Names are HTTP tokens; Authorization, Host, Content-Type, Content-Length, Transfer-Encoding, Connection and Accept are set by Rebound and refused here. Values are never logged or shown. Default none."`
	// Certificates for a provider or gateway behind a private CA, or a
	// proxy that inspects TLS (netclient).
	CAFile string `toml:"ca_file" json:"ca_file" jsonschema:"default=" jsonschema_description:"Absolute path of a PEM file of certificate authorities trusted besides the system's, for the provider, its model list and MCP servers over HTTP (a private CA, or a company proxy that inspects TLS). Read at start-up; a file that holds no certificate stops it with an error naming this key. Default empty (the system's authorities only). Overridden by REBOUND_CA_FILE."`
	CAOnly bool   `toml:"ca_only" json:"ca_only" jsonschema:"default=false" jsonschema_description:"Trust only the authorities in provider.ca_file, not the system's as well. Default false."`

	// APIKey is the value of the variable named by APIKeyEnv, else that
	// variable's entry in the credentials file (see APIKey); it may be
	// empty, since an editor must be able to initialize the agent before the
	// user has set it up. Only Load sets it.
	APIKey string `toml:"-" json:"-"`
}

// Streaming modes (agent.streaming).
const (
	StreamingLive = "live"
	StreamingHeld = "held"
)

// Agent configures the agent loop.
type Agent struct {
	Streaming           string `toml:"streaming" json:"streaming" jsonschema:"enum=live,enum=held,default=live" jsonschema_description:"live: the editor sees each reply as it streams; an attempt that fails after text was shown is continued from that text, so nothing shown is thrown away. held: a reply is shown once it has finished, so a failed attempt shows nothing. Default live. Overridden by REBOUND_STREAMING and --streaming."`
	MaxSteps            int    `toml:"max_steps" json:"max_steps" jsonschema:"minimum=1,maximum=1000,default=50" jsonschema_description:"Model requests (steps) one turn may make, 1 to 1000; a step that asks for tools is followed by another. The turn then stops with max_turn_requests. Default 50."`
	Instructions        string `toml:"instructions" json:"instructions" jsonschema_description:"Text added to the built-in system prompt in every session (the project's AGENTS.md is added too). Default empty."`
	ReplaceInstructions bool   `toml:"replace_instructions" json:"replace_instructions" jsonschema:"default=false" jsonschema_description:"Use agent.instructions instead of the built-in system prompt, not after it. Default false."`
	WaitStatus          string `toml:"wait_status" json:"wait_status" jsonschema:"enum=auto,enum=notice,enum=tool_call,enum=meta,default=auto" jsonschema_description:"How the editor is shown what Rebound does while it waits (a retry, a compaction, an MCP server starting) and why a turn gave up. auto: a notice to clients that advertise session.notices, else a status tool call of Rebound's own. notice: notices only, to clients that show them. tool_call: the status tool call for every client. meta: only the machine-readable _meta[rebound/retry] on session_info_update, which every choice sends too. Default auto."`
	DefaultMode         string `toml:"default_mode" json:"default_mode" jsonschema:"enum=ask,enum=accept_edits,enum=read_only,enum=full_access,default=ask" jsonschema_description:"The mode of a new session, and of one with no mode recorded: ask (permission before every edit, write and command), accept_edits (edits and writes without asking, commands ask), read_only (only the tools that read are offered) or full_access (nothing asks). The editor changes it per session. Default ask."`
}

// Tools configures the tools the model may call.
type Tools struct {
	CommandTimeout    Duration `toml:"command_timeout" json:"command_timeout" jsonschema_description:"How long run_command lets a command run when the model asks for no timeout, as a Go duration; then the command is killed. Default 2m."`
	MaxCommandTimeout Duration `toml:"max_command_timeout" json:"max_command_timeout" jsonschema_description:"The longest timeout the model may ask run_command for, as a Go duration. Default 30m."`
	OutputLimit       int      `toml:"output_limit" json:"output_limit" jsonschema:"minimum=1024,maximum=16777216,default=65536" jsonschema_description:"Bytes of a command's output kept for the model, 1024 to 16777216; the beginning and the end are kept when it prints more. Default 65536."`
}

// Recovery holds the settings of the transient-failure retry policy and of
// the deadlines and watchdogs around provider requests.
type Recovery struct {
	MaxRetries            int        `toml:"max_retries" json:"max_retries" jsonschema:"minimum=0,default=2" jsonschema_description:"Retries of one request after a retryable failure; 0 disables retrying. Default 2."`
	InitialDelay          Duration   `toml:"initial_delay" json:"initial_delay" jsonschema_description:"Backoff before the first retry, as a Go duration; doubled for each later retry. Must not exceed max_delay. Default 500ms."`
	MaxDelay              Duration   `toml:"max_delay" json:"max_delay" jsonschema_description:"Upper bound of the backoff, as a Go duration. Default 10s."`
	Jitter                float64    `toml:"jitter" json:"jitter" jsonschema:"minimum=0,maximum=1,default=0.1" jsonschema_description:"Each backoff is multiplied by a random factor in [1-jitter, 1+jitter]; between 0 and 1. Default 0.1."`
	JitterMode            string     `toml:"jitter_mode" json:"jitter_mode" jsonschema:"enum=proportional,enum=full,default=proportional" jsonschema_description:"How the backoff is jittered: proportional multiplies it by a factor in [1-jitter, 1+jitter]; full makes it uniform in [0, backoff] (full jitter), which spreads out chats that hit a shared limit together. Default proportional."`
	MaxRetryAfter         Duration   `toml:"max_retry_after" json:"max_retry_after" jsonschema_description:"Longest Retry-After from the provider that is honoured, as a Go duration; a longer one ends recovery at once. Default 10s."`
	RetryableCodes        []string   `toml:"retryable_codes" json:"retryable_codes" jsonschema:"uniqueItems=true,enum=RATE_LIMIT,enum=OVERLOADED,enum=SERVER,enum=TIMEOUT,enum=TRANSPORT,enum=EMPTY_RESPONSE,enum=CONTEXT_OVERFLOW,enum=AUTH,enum=QUOTA,enum=INVALID_REQUEST,enum=PROTOCOL,enum=ABORTED,enum=UNKNOWN,default=RATE_LIMIT,default=OVERLOADED,default=SERVER,default=TIMEOUT,default=TRANSPORT,default=EMPTY_RESPONSE" jsonschema_description:"Failure codes that are retried: RATE_LIMIT, OVERLOADED, SERVER, TIMEOUT, TRANSPORT, EMPTY_RESPONSE, CONTEXT_OVERFLOW, AUTH, QUOTA, INVALID_REQUEST, PROTOCOL, ABORTED, UNKNOWN. Default RATE_LIMIT, OVERLOADED, SERVER, TIMEOUT, TRANSPORT, EMPTY_RESPONSE."`
	RequestDeadline       Duration   `toml:"request_deadline" json:"request_deadline" jsonschema_description:"Bounds the recovery of one step (one model request): its failed attempts and the waits between them, as a Go duration; a wait that would pass it is not started. A stream that is still producing is never cut by it, and tools and permission prompts do not count. Default 5m."`
	AttemptTimeout        Duration   `toml:"attempt_timeout" json:"attempt_timeout" jsonschema_description:"Longest time one provider request may take, as a Go duration; 0 means no limit. Default 0."`
	FirstTokenTimeout     Duration   `toml:"first_token_timeout" json:"first_token_timeout" jsonschema_description:"Longest wait for the first streamed token of a request, as a Go duration. Default 90s."`
	StreamIdleTimeout     Duration   `toml:"stream_idle_timeout" json:"stream_idle_timeout" jsonschema_description:"Longest gap between two streamed chunks, as a Go duration. Default 5m."`
	FallbackModel         string     `toml:"fallback_model" json:"fallback_model" jsonschema_description:"Model to switch to after overload_fallback_after consecutive OVERLOADED failures, for the rest of the turn. Empty (the default) turns overload fallback off."`
	OverloadFallbackAfter int        `toml:"overload_fallback_after" json:"overload_fallback_after" jsonschema:"minimum=1,default=3" jsonschema_description:"Consecutive OVERLOADED failures before switching to fallback_model. Default 3."`
	Overflow              Overflow   `toml:"overflow" json:"overflow" jsonschema_description:"Recovery from CONTEXT_OVERFLOW by compacting the conversation."`
	Truncation            Truncation `toml:"truncation" json:"truncation" jsonschema_description:"Recovery from replies cut at the output limit (finish_reason length)."`
	Rules                 []Rule     `toml:"rules" json:"rules,omitempty" jsonschema_description:"User rules, tried in order before the built-in policies; the first that matches a failure owns it (its delay, its budget)."`
}

// Overflow configures compaction on CONTEXT_OVERFLOW.
type Overflow struct {
	Enabled            bool `toml:"enabled" json:"enabled" jsonschema:"default=true" jsonschema_description:"Compact the conversation once and retry when the provider says it is too long. Default true."`
	KeepRecentMessages int  `toml:"keep_recent_messages" json:"keep_recent_messages" jsonschema:"minimum=0,default=2" jsonschema_description:"Messages before the newest user message kept verbatim, besides the system prompt; older ones are summarised. Default 2."`
	// CompactAt is a fraction, not a percentage: 0.9, not 90.
	CompactAt float64 `toml:"compact_at" json:"compact_at" jsonschema:"minimum=0,maximum=1,default=0.9" jsonschema_description:"Compact before the next request, once a turn, when the last request's usage has reached this fraction of the model's context window (provider.context_window or Rebound's table; never when it is unknown). A fraction above 0 and at most 1; 0 turns it off, and so does enabled = false. Default 0.9."`
}

// Truncation configures recovery from finish_reason length.
type Truncation struct {
	EscalatedMaxTokens int `toml:"escalated_max_tokens" json:"escalated_max_tokens" jsonschema:"minimum=1,maximum=1000000,default=65536" jsonschema_description:"Output budget of the one retry after a truncated reply; skipped when provider.max_tokens is already at least this. Default 65536."`
	MaxContinuations   int `toml:"max_continuations" json:"max_continuations" jsonschema:"minimum=0,maximum=20,default=3" jsonschema_description:"Continuation requests after the escalated retry is truncated too; their parts are joined verbatim. Default 3."`
}

// Rule is one [[recovery.rules]] entry.
type Rule struct {
	Match      string   `toml:"match" json:"match" jsonschema_description:"An HTTP status (\"429\"), a failure code (\"RATE_LIMIT\", any case), field=value on the provider's error JSON (\"code=insufficient_quota\"), or msg~substring (any case) on its message."`
	Delay      Duration `toml:"delay" json:"delay" jsonschema_description:"Wait before each retry, 100ms to 1h; a longer Retry-After is honoured up to recovery.max_retry_after."`
	MaxRetries int      `toml:"max_retries" json:"max_retries" jsonschema:"minimum=0,maximum=1000" jsonschema_description:"Retries this rule allows, 0 to 1000; 0 reports the failure at once."`
	Action     string   `toml:"action" json:"action,omitempty" jsonschema:"enum=retry,enum=strip_images" jsonschema_description:"retry (the default) or strip_images: replace the request's images with text placeholders and retry once, for a model that accepts no images."`
}

// Duration is a time.Duration written as a Go duration string ("500ms",
// "1m30s") in TOML and JSON, which people read more easily than nanoseconds.
type Duration time.Duration

// String returns the duration in time.Duration's format.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler; encoding/json uses it too,
// so a Duration is a JSON string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. The error text is shown
// to users after the key's name, so it says what is expected.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("must be a duration such as \"500ms\" or \"1m30s\", got %q", b)
	}
	*d = Duration(v)
	return nil
}

// Defaults that are also quoted in messages and flag usage.
const (
	defaultBaseURL   = "https://api.openai.com/v1"
	defaultAPIKeyEnv = "OPENAI_API_KEY"
	defaultModel     = "gpt-4o-mini"
	defaultMaxTokens = 8192
	defaultLogLevel  = "info"

	maxMaxTokens = 1_000_000
	// maxContextWindow and maxPrice bound what no model has, so a typo
	// (an extra digit) is caught.
	maxContextWindow = 100_000_000
	maxPrice         = 100_000
)

// logLevels are the accepted values of log_level.
var logLevels = []string{"debug", "info", "warn", "error"}

// Default returns the built-in configuration. StateDir is empty because its
// default depends on the environment; Load fills it in.
func Default() Config {
	// The retry policy's defaults are recovery's: stated once, there.
	policy := recovery.DefaultPolicy()
	retryable := make([]string, len(policy.Retryable))
	for i, c := range policy.Retryable {
		retryable[i] = string(c)
	}
	return Config{
		Provider: Provider{
			BaseURL:   defaultBaseURL,
			APIKeyEnv: defaultAPIKeyEnv,
			Model:     defaultModel,
			MaxTokens: defaultMaxTokens,

			ShareLimits: true,
			Pacing:      true,
			LimitScope:  "model",

			Continuation: string(llm.ContinueAuto),
			StreamUsage:  string(llm.StreamUsageAuto),
			Currency:     "USD",
		},
		Recovery: Recovery{
			MaxRetries:        policy.MaxRetries,
			InitialDelay:      Duration(policy.InitialDelay),
			MaxDelay:          Duration(policy.MaxDelay),
			Jitter:            policy.Jitter,
			JitterMode:        recovery.JitterProportional,
			MaxRetryAfter:     Duration(policy.MaxRetryAfter),
			RetryableCodes:    retryable,
			RequestDeadline:   Duration(5 * time.Minute),
			AttemptTimeout:    0,
			FirstTokenTimeout: Duration(90 * time.Second),
			StreamIdleTimeout: Duration(5 * time.Minute),

			OverloadFallbackAfter: 3,
			Overflow:              Overflow{Enabled: true, KeepRecentMessages: 2, CompactAt: 0.9},
			Truncation:            Truncation{EscalatedMaxTokens: 65536, MaxContinuations: 3},
		},
		// The agent's own defaults, so they are stated once.
		Agent: Agent{Streaming: StreamingLive, MaxSteps: agent.DefaultMaxRequests, DefaultMode: agent.DefaultMode, WaitStatus: agent.WaitStatusAuto},
		Tools: Tools{
			CommandTimeout:    Duration(agent.DefaultCommandTimeout),
			MaxCommandTimeout: Duration(agent.DefaultMaxCommandTimeout),
			OutputLimit:       agent.DefaultOutputLimit,
		},
		LogLevel: defaultLogLevel,
	}
}

// FieldError is a bad or unknown setting. Source is where the value came
// from: a file path, an environment variable or a flag ("--model"); it is
// empty when Validate is called directly.
type FieldError struct {
	Source  string
	Key     string // dotted TOML key, e.g. "provider.max_tokens"
	Problem string // what is wrong, e.g. "must be a positive integer, got -5"
}

func (e *FieldError) Error() string {
	if e.Source == "" {
		return e.Key + ": " + e.Problem
	}
	return e.Source + ": " + e.Key + ": " + e.Problem
}

// Validate checks every setting and returns all problems found, joined, each
// a *FieldError. It does not look at APIKey: a missing key is reported when a
// prompt needs it, naming Provider.APIKeyEnv.
func (c Config) Validate() error {
	var ps problems
	ps.checkProvider(c.Provider)
	ps.checkProviderLimits(c.Provider)
	ps.checkProviderPrices(c.Provider)
	ps.checkProviderShared(c.Provider)
	ps.checkRetries(c.Recovery)
	ps.checkRecoveries(c.Recovery)
	ps.checkRules(c.Recovery.Rules)
	ps.checkAgent(c.Agent)
	ps.checkTools(c.Tools)
	if !slices.Contains(logLevels, c.LogLevel) {
		ps.bad("log_level", "must be one of %s, got %q", strings.Join(logLevels, ", "), c.LogLevel)
	}
	// An editor starts the agent in an arbitrary working directory, so a
	// relative state directory would land somewhere unpredictable.
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		ps.bad("state_dir", "must be an absolute path, got %q", c.StateDir)
	}
	return errors.Join(ps...)
}

// problems are what Validate found, in the order found.
type problems []error

func (ps *problems) bad(key, format string, args ...any) {
	*ps = append(*ps, &FieldError{Key: key, Problem: fmt.Sprintf(format, args...)})
}

// checkProvider checks where requests go and what they ask for.
func (ps *problems) checkProvider(p Provider) {
	if err := checkBaseURL(p.BaseURL); err != "" {
		ps.bad("provider.base_url", "%s", err)
	}
	if !envName.MatchString(p.APIKeyEnv) {
		// The value is not echoed: a common mistake is to paste the key
		// itself here.
		ps.bad("provider.api_key_env", "must be the name of an environment variable (letters, digits and _, not starting with a digit), not the key itself")
	}
	if strings.TrimSpace(p.Model) == "" {
		ps.bad("provider.model", "must not be empty")
	} else {
		ps.checkModelID("provider.model", p.Model)
	}
	for i, m := range p.Models {
		ps.checkModelID(fmt.Sprintf("provider.models[%d]", i), m)
	}
	if p.CAFile != "" && !filepath.IsAbs(p.CAFile) {
		// Rebound is started in whatever directory the editor chooses.
		ps.bad("provider.ca_file", "must be an absolute path, got %q", p.CAFile)
	}
	if p.CAOnly && p.CAFile == "" {
		ps.bad("provider.ca_only", "needs provider.ca_file (or %s): trusting only the file's authorities needs a file", "REBOUND_CA_FILE")
	}
	if p.ReasoningEffort != "" && !slices.Contains(agent.ReasoningEfforts, p.ReasoningEffort) {
		ps.bad("provider.reasoning_effort", "must be one of %s, or empty, got %q", strings.Join(agent.ReasoningEfforts, ", "), p.ReasoningEffort)
	}
}

// checkModelID holds a configured model id to the rule a provider's listed
// ids are held to (llm.CheckModelID): it is sent to the provider and shown
// in the editor's model picker. The value is echoed quoted and cut.
func (ps *problems) checkModelID(key, id string) {
	if err := llm.CheckModelID(id); err != nil {
		ps.bad(key, "%v, got %s", err, quoteClipped(id))
	}
}

// quoteClipped quotes s (so a control character is an escape) cut to 60
// bytes, for an error that echoes a value from outside.
func quoteClipped(s string) string {
	if c := text.Prefix(s, 60); c != s {
		return strconv.Quote(c) + "…"
	}
	return strconv.Quote(s)
}

// checkProviderLimits checks how replies are continued, sized and counted.
func (ps *problems) checkProviderLimits(p Provider) {
	switch llm.Continuation(p.Continuation) {
	case llm.ContinueAuto, llm.ContinuePrefix, llm.ContinuePrompt:
	default:
		ps.bad("provider.continuation", "must be auto, prefix or prompt, got %q", p.Continuation)
	}
	if p.ContextWindow < 0 || p.ContextWindow > maxContextWindow {
		ps.bad("provider.context_window", "must be between 0 and %d tokens, got %d", maxContextWindow, p.ContextWindow)
	}
	switch llm.StreamUsage(p.StreamUsage) {
	case llm.StreamUsageAuto, llm.StreamUsageOn, llm.StreamUsageOff:
	default:
		ps.bad("provider.stream_usage", "must be auto, on or off, got %q", p.StreamUsage)
	}
}

// checkProviderPrices checks the prices the cost is reckoned from, and
// max_tokens.
func (ps *problems) checkProviderPrices(p Provider) {
	for _, pr := range []struct {
		key string
		v   float64
	}{{"provider.price_input", p.PriceInput}, {"provider.price_cached_input", p.PriceCachedInput}, {"provider.price_output", p.PriceOutput}} {
		if !(pr.v >= 0 && pr.v <= maxPrice) { // also NaN
			ps.bad(pr.key, "must be a price per million tokens between 0 and %d, got %v", maxPrice, pr.v)
		}
	}
	if !currency.MatchString(p.Currency) {
		ps.bad("provider.currency", "must be an ISO 4217 code of three capital letters (USD, EUR), got %q", p.Currency)
	}
	switch {
	case p.MaxTokens <= 0:
		ps.bad("provider.max_tokens", "must be a positive integer, got %d", p.MaxTokens)
	case p.MaxTokens > maxMaxTokens:
		ps.bad("provider.max_tokens", "must be at most %d, got %d", maxMaxTokens, p.MaxTokens)
	}
}

// maxHeaders and maxHeaderValue bound provider.headers: a gateway needs a
// few short ones.
const (
	maxHeaders     = 64
	maxHeaderValue = 8 << 10
)

// reservedHeaders are the headers Rebound sets on a provider request.
var reservedHeaders = []string{"Authorization", "Host", "Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "Accept"}

// checkProviderShared checks the shared limit's settings and the extra
// headers. A header's value is never quoted: it may be a gateway's key.
func (ps *problems) checkProviderShared(p Provider) {
	if p.LimitScope != "model" && p.LimitScope != "key" {
		ps.bad("provider.limit_scope", "must be model or key, got %q", p.LimitScope)
	}
	if p.MaxInFlight < 0 || p.MaxInFlight > 1000 {
		ps.bad("provider.max_in_flight", "must be between 0 (no cap) and 1000, got %d", p.MaxInFlight)
	}
	if p.MaxInFlight > 0 && !p.ShareLimits {
		ps.bad("provider.max_in_flight", "needs provider.share_limits = true (the cap is shared state), got %d with sharing off", p.MaxInFlight)
	}
	if len(p.Headers) > maxHeaders {
		ps.bad("provider.headers", "must have at most %d headers, got %d", maxHeaders, len(p.Headers))
	}
	named := map[string]string{} // canonical name → the name that had it first
	for _, name := range slices.Sorted(maps.Keys(p.Headers)) {
		key := keyString(toml.Key{"provider", "headers", name})
		v := p.Headers[name]
		first, twice := named[http.CanonicalHeaderKey(name)]
		if !twice {
			named[http.CanonicalHeaderKey(name)] = name
		}
		switch {
		case twice:
			// Names that differ in case are one header: which value went
			// would be a draw of the map's order.
			ps.bad(key, "is the same header as %s (names are not case-sensitive); keep one", keyString(toml.Key{"provider", "headers", first}))
		case !headerToken(name):
			ps.bad(key, "must be named with an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~), got %q", name)
		case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, name) }):
			ps.bad(key, "is set by Rebound (the key comes from provider.api_key_env); it cannot be set here")
		case len(v) > maxHeaderValue:
			ps.bad(key, "must be at most %d bytes long, got %d (the value is not shown)", maxHeaderValue, len(v))
		case !headerValue(v):
			ps.bad(key, "must be a header value: no line breaks or other control characters, and valid UTF-8 (the value is not shown)")
		}
	}
}

// headerToken: an HTTP field name (RFC 9110's token), at most 256 bytes.
func headerToken(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// headerValue: valid UTF-8 without control characters but a tab, so no CR
// or LF can split the request.
func headerValue(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r != '\t' && unicode.IsControl(r) })
}

// checkRetries checks the retry budget, its delays and timeouts, and the
// codes retried.
func (ps *problems) checkRetries(r Recovery) {
	if r.MaxRetries < 0 {
		ps.bad("recovery.max_retries", "must be zero or a positive integer, got %d", r.MaxRetries)
	}
	for _, d := range []struct {
		key       string
		v         Duration
		zeroMeans string // non-empty if 0 is allowed
	}{
		{"recovery.initial_delay", r.InitialDelay, ""},
		{"recovery.max_delay", r.MaxDelay, ""},
		{"recovery.max_retry_after", r.MaxRetryAfter, ""},
		{"recovery.request_deadline", r.RequestDeadline, ""},
		{"recovery.attempt_timeout", r.AttemptTimeout, "no limit"},
		{"recovery.first_token_timeout", r.FirstTokenTimeout, ""},
		{"recovery.stream_idle_timeout", r.StreamIdleTimeout, ""},
	} {
		switch {
		case d.v < 0 && d.zeroMeans != "":
			ps.bad(d.key, "must not be negative (0 means %s), got %s", d.zeroMeans, d.v)
		case d.v <= 0 && d.zeroMeans == "":
			ps.bad(d.key, "must be a positive duration, got %s", d.v)
		}
	}
	if r.InitialDelay > 0 && r.MaxDelay > 0 && r.InitialDelay > r.MaxDelay {
		ps.bad("recovery.initial_delay", "must not exceed recovery.max_delay (%s), got %s", r.MaxDelay, r.InitialDelay)
	}
	if r.Jitter < 0 || r.Jitter > 1 || r.Jitter != r.Jitter {
		ps.bad("recovery.jitter", "must be between 0 and 1, got %v", r.Jitter)
	}
	if !slices.Contains(recovery.JitterModes, r.JitterMode) {
		ps.bad("recovery.jitter_mode", "must be one of %s, got %q", strings.Join(recovery.JitterModes, ", "), r.JitterMode)
	}
	seen := map[string]bool{}
	for _, code := range r.RetryableCodes {
		switch {
		case !slices.Contains(recovery.Codes, recovery.Code(code)):
			ps.bad("recovery.retryable_codes", "unknown code %q; known codes are %s", code, recovery.KnownCodes())
		case seen[code]:
			ps.bad("recovery.retryable_codes", "code %q is listed more than once", code)
		}
		seen[code] = true
	}
}

// checkRecoveries checks the recoveries other than a retry: fallback,
// compaction and continuation.
func (ps *problems) checkRecoveries(r Recovery) {
	if r.FallbackModel != "" { // empty turns the fallback off
		ps.checkModelID("recovery.fallback_model", r.FallbackModel)
	}
	if r.OverloadFallbackAfter < 1 {
		ps.bad("recovery.overload_fallback_after", "must be a positive integer, got %d", r.OverloadFallbackAfter)
	}
	if r.Overflow.KeepRecentMessages < 0 {
		ps.bad("recovery.overflow.keep_recent_messages", "must be zero or a positive integer, got %d", r.Overflow.KeepRecentMessages)
	}
	if f := r.Overflow.CompactAt; f < 0 || f > 1 || f != f {
		ps.bad("recovery.overflow.compact_at", "must be a fraction of the context window above 0 and at most 1 (0.9 is 90%%), or 0 to turn it off, got %v", f)
	}
	if t := r.Truncation.EscalatedMaxTokens; t < 1 || t > maxMaxTokens {
		ps.bad("recovery.truncation.escalated_max_tokens", "must be between 1 and %d, got %d", maxMaxTokens, t)
	}
	if n := r.Truncation.MaxContinuations; n < 0 || n > 20 {
		ps.bad("recovery.truncation.max_continuations", "must be between 0 and 20, got %d", n)
	}
}

// checkRules checks the user's recovery rules.
func (ps *problems) checkRules(rules []Rule) {
	for i, rule := range rules {
		key := fmt.Sprintf("recovery.rules[%d]", i)
		if err := recovery.CheckMatch(rule.Match); err != nil {
			ps.bad(key+".match", "%v", err)
		}
		if d := time.Duration(rule.Delay); d < 100*time.Millisecond || d > time.Hour {
			ps.bad(key+".delay", "must be between 100ms and 1h, got %s", rule.Delay)
		}
		if rule.MaxRetries < 0 || rule.MaxRetries > 1000 {
			ps.bad(key+".max_retries", "must be between 0 and 1000, got %d", rule.MaxRetries)
		}
		if rule.Action != "" && rule.Action != "retry" && rule.Action != "strip_images" {
			ps.bad(key+".action", "must be retry or strip_images, got %q", rule.Action)
		}
	}
}

func (ps *problems) checkAgent(a Agent) {
	if a.Streaming != StreamingLive && a.Streaming != StreamingHeld {
		ps.bad("agent.streaming", "must be live or held, got %q", a.Streaming)
	}
	if !slices.Contains(agent.WaitStatuses, a.WaitStatus) {
		ps.bad("agent.wait_status", "must be one of %s, got %q", strings.Join(agent.WaitStatuses, ", "), a.WaitStatus)
	}
	if !agent.ValidMode(a.DefaultMode) {
		ps.bad("agent.default_mode", "must be one of %s, got %q", agent.ModeIDs(), a.DefaultMode)
	}
	if n := a.MaxSteps; n < 1 || n > 1000 {
		ps.bad("agent.max_steps", "must be between 1 and 1000, got %d", n)
	}
}

func (ps *problems) checkTools(t Tools) {
	if t.CommandTimeout <= 0 {
		ps.bad("tools.command_timeout", "must be a positive duration, got %s", t.CommandTimeout)
	}
	switch {
	case t.MaxCommandTimeout <= 0:
		ps.bad("tools.max_command_timeout", "must be a positive duration, got %s", t.MaxCommandTimeout)
	case t.MaxCommandTimeout < t.CommandTimeout:
		ps.bad("tools.max_command_timeout", "must be at least tools.command_timeout (%s), got %s", t.CommandTimeout, t.MaxCommandTimeout)
	}
	if n := t.OutputLimit; n < 1024 || n > 16<<20 {
		ps.bad("tools.output_limit", "must be between 1024 and 16777216 bytes, got %d", n)
	}
}

// envName is what POSIX shells accept as a variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// currency is an ISO 4217 code.
var currency = regexp.MustCompile(`^[A-Z]{3}$`)

// checkBaseURL returns what is wrong with s, or "".
func checkBaseURL(s string) string {
	const want = "must be an absolute http or https URL"
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("%s, got %q", want, s)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if u.User != nil {
			s = u.Redacted() // hides a password embedded in the URL
		}
		return fmt.Sprintf("%s, got %q", want, s)
	}
	shown := s
	if u.User != nil {
		shown = u.Redacted()
	}
	switch {
	case strings.ContainsAny(s, " \t\r\n"):
		return fmt.Sprintf("must not contain spaces, got %q", shown)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("must not have a query or fragment, got %q", shown)
	case strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions") || strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/completions"):
		// Rebound appends /chat/completions itself.
		return fmt.Sprintf("must be the API's base, up to and including the version path (e.g. %q), not the endpoint itself, got %q",
			strings.TrimSuffix(strings.TrimSuffix(strings.TrimRight(shown, "/"), "/completions"), "/chat"), shown)
	}
	return ""
}

// String prints the configuration for logs; the API key shows only whether
// it is set.
func (c Config) String() string {
	type plain Config // no methods, so no recursion; Provider still redacts
	return fmt.Sprintf("%+v", plain(c))
}

// GoString is like String for %#v.
func (c Config) GoString() string {
	type plain Config
	return "config.Config" + strings.TrimPrefix(fmt.Sprintf("%#v", plain(c)), "config.plain")
}

// String prints the provider settings; the API key shows only whether it is
// set.
func (p Provider) String() string {
	type plain Provider
	q := plain(p)
	q.APIKey = redact(p.APIKey)
	return fmt.Sprintf("%+v", q)
}

// GoString is like String for %#v.
func (p Provider) GoString() string {
	type plain Provider
	q := plain(p)
	q.APIKey = redact(p.APIKey)
	return "config.Provider" + strings.TrimPrefix(fmt.Sprintf("%#v", q), "config.plain")
}

// Headers are provider.headers. Their values may be a gateway's key: they
// print and marshal as "[redacted]", names only shown.
type Headers map[string]string

func (h Headers) redacted() map[string]string {
	if h == nil {
		return nil
	}
	r := make(map[string]string, len(h))
	for k, v := range h {
		r[k] = redact(v)
	}
	return r
}

// String shows the names, never the values.
func (h Headers) String() string { return fmt.Sprint(h.redacted()) }

// GoString is like String for %#v.
func (h Headers) GoString() string {
	return fmt.Sprintf("config.Headers%#v", h.redacted())[len("config.Headers"):]
}

// MarshalJSON writes the names, never the values.
func (h Headers) MarshalJSON() ([]byte, error) { return json.Marshal(h.redacted()) }

func redact(key string) string {
	if key == "" {
		return ""
	}
	return "[redacted]"
}
