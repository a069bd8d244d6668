package config_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/config"
)

func TestDefault(t *testing.T) {
	want := config.Config{
		Provider: config.Provider{
			BaseURL:   "https://api.openai.com/v1",
			APIKeyEnv: "OPENAI_API_KEY",
			Model:     "gpt-4o-mini",
			MaxTokens: 8192,

			ShareLimits: true,
			Pacing:      true,
			LimitScope:  "model",

			Continuation: "auto",
			StreamUsage:  "auto",
			Currency:     "USD",
		},
		Recovery: config.Recovery{
			MaxRetries:        2,
			InitialDelay:      config.Duration(500 * time.Millisecond),
			MaxDelay:          config.Duration(10 * time.Second),
			Jitter:            0.1,
			JitterMode:        "proportional",
			MaxRetryAfter:     config.Duration(10 * time.Second),
			RetryableCodes:    []string{"RATE_LIMIT", "OVERLOADED", "SERVER", "TIMEOUT", "TRANSPORT", "EMPTY_RESPONSE"},
			RequestDeadline:   config.Duration(5 * time.Minute),
			AttemptTimeout:    0,
			FirstTokenTimeout: config.Duration(90 * time.Second),
			StreamIdleTimeout: config.Duration(5 * time.Minute),

			OverloadFallbackAfter: 3,
			Overflow:              config.Overflow{Enabled: true, KeepRecentMessages: 2, CompactAt: 0.9},
			Truncation:            config.Truncation{EscalatedMaxTokens: 65536, MaxContinuations: 3},
		},
		Agent:    config.Agent{Streaming: "live", MaxSteps: 50, DefaultMode: "ask", WaitStatus: "auto"},
		Tools:    config.Tools{CommandTimeout: config.Duration(2 * time.Minute), MaxCommandTimeout: config.Duration(30 * time.Minute), OutputLimit: 65536},
		LogLevel: "info",
	}
	got := config.Default()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Default() (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v, want nil", err)
	}
}

func TestDefault_FreshSlices(t *testing.T) {
	a := config.Default()
	a.Recovery.RetryableCodes[0] = "UNKNOWN"
	if b := config.Default(); b.Recovery.RetryableCodes[0] != "RATE_LIMIT" {
		t.Errorf("Default() shares RetryableCodes between calls: got %v", b.Recovery.RetryableCodes)
	}
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*config.Config)
		wantKey string // "" means valid
		wantMsg string
	}{
		{"attempt timeout zero", func(c *config.Config) { c.Recovery.AttemptTimeout = 0 }, "", ""},
		{"no retries", func(c *config.Config) { c.Recovery.MaxRetries = 0; c.Recovery.RetryableCodes = nil }, "", ""},
		{"jitter bounds", func(c *config.Config) { c.Recovery.Jitter = 1 }, "", ""},
		{"max tokens max", func(c *config.Config) { c.Provider.MaxTokens = 1_000_000 }, "", ""},
		{"http url", func(c *config.Config) { c.Provider.BaseURL = "http://localhost:8080/v1" }, "", ""},
		{"equal delays", func(c *config.Config) { c.Recovery.InitialDelay = c.Recovery.MaxDelay }, "", ""},
		{"max tokens zero", func(c *config.Config) { c.Provider.MaxTokens = 0 }, "provider.max_tokens", "must be a positive integer, got 0"},
		{"max tokens too big", func(c *config.Config) { c.Provider.MaxTokens = 1_000_001 }, "provider.max_tokens", "must be at most 1000000, got 1000001"},
		{"model list entry with a space", func(c *config.Config) { c.Provider.Models = []string{"ok", "gpt 4"} }, "provider.models[1]", `must be a model name: 1 to 200 bytes of printable characters, without spaces, got "gpt 4"`},
		{"unknown reasoning effort", func(c *config.Config) { c.Provider.ReasoningEffort = "max" }, "provider.reasoning_effort", `must be one of low, medium, high, or empty, got "max"`},
		{"continuation prefix", func(c *config.Config) { c.Provider.Continuation = "prefix" }, "", ""},
		{"usage settings", func(c *config.Config) {
			c.Provider.ContextWindow, c.Provider.StreamUsage, c.Provider.PriceInput, c.Provider.PriceOutput, c.Provider.Currency = 32768, "off", 2.5, 10, "EUR"
		}, "", ""},
		{"negative context window", func(c *config.Config) { c.Provider.ContextWindow = -1 }, "provider.context_window", "must be between 0 and 100000000 tokens, got -1"},
		{"unknown stream usage", func(c *config.Config) { c.Provider.StreamUsage = "yes" }, "provider.stream_usage", `must be auto, on or off, got "yes"`},
		{"negative price", func(c *config.Config) { c.Provider.PriceCachedInput = -0.5 }, "provider.price_cached_input", "must be a price per million tokens between 0 and 100000, got -0.5"},
		{"NaN price", func(c *config.Config) { c.Provider.PriceOutput = math.NaN() }, "provider.price_output", "must be a price per million tokens between 0 and 100000, got NaN"},
		{"lower-case currency", func(c *config.Config) { c.Provider.Currency = "usd" }, "provider.currency", `must be an ISO 4217 code of three capital letters (USD, EUR), got "usd"`},
		{"unknown continuation", func(c *config.Config) { c.Provider.Continuation = "native" }, "provider.continuation", `must be auto, prefix or prompt, got "native"`},
		{"empty model", func(c *config.Config) { c.Provider.Model = " " }, "provider.model", "must not be empty"},
		{"negative retries", func(c *config.Config) { c.Recovery.MaxRetries = -1 }, "recovery.max_retries", "got -1"},
		{"negative jitter", func(c *config.Config) { c.Recovery.Jitter = -0.1 }, "recovery.jitter", "must be between 0 and 1"},
		{"zero max delay", func(c *config.Config) { c.Recovery.MaxDelay = 0 }, "recovery.max_delay", "must be a positive duration, got 0s"},
		{"negative attempt timeout", func(c *config.Config) { c.Recovery.AttemptTimeout = -1 }, "recovery.attempt_timeout", "must not be negative"},
		{"zero first token", func(c *config.Config) { c.Recovery.FirstTokenTimeout = 0 }, "recovery.first_token_timeout", "positive"},
		{"zero idle", func(c *config.Config) { c.Recovery.StreamIdleTimeout = 0 }, "recovery.stream_idle_timeout", "positive"},
		{"zero deadline", func(c *config.Config) { c.Recovery.RequestDeadline = 0 }, "recovery.request_deadline", "positive"},
		{"zero max steps", func(c *config.Config) { c.Agent.MaxSteps = 0 }, "agent.max_steps", "between 1 and 1000"},
		{"unknown session mode", func(c *config.Config) { c.Agent.DefaultMode = "yolo" }, "agent.default_mode", `must be one of ask, accept_edits, read_only, full_access, got "yolo"`},
		{"unknown streaming mode", func(c *config.Config) { c.Agent.Streaming = "fast" }, "agent.streaming", `must be live or held, got "fast"`},
		{"zero command timeout", func(c *config.Config) { c.Tools.CommandTimeout = 0 }, "tools.command_timeout", "positive"},
		{"max command timeout below the default", func(c *config.Config) { c.Tools.MaxCommandTimeout = config.Duration(time.Second) }, "tools.max_command_timeout", "at least tools.command_timeout"},
		{"tiny output limit", func(c *config.Config) { c.Tools.OutputLimit = 10 }, "tools.output_limit", "between 1024 and 16777216"},
		{"zero retry after", func(c *config.Config) { c.Recovery.MaxRetryAfter = 0 }, "recovery.max_retry_after", "positive"},
		{"lower-case code", func(c *config.Config) { c.Recovery.RetryableCodes = []string{"server"} }, "recovery.retryable_codes", `unknown code "server"`},
		{"log level", func(c *config.Config) { c.LogLevel = "INFO" }, "log_level", `must be one of debug, info, warn, error, got "INFO"`},
		{"relative state dir", func(c *config.Config) { c.StateDir = "state" }, "state_dir", "must be an absolute path"},
		{"url without host", func(c *config.Config) { c.Provider.BaseURL = "https://" }, "provider.base_url", "absolute http or https URL"},
		{"url password redacted", func(c *config.Config) { c.Provider.BaseURL = "ftp://u:hunter2@x" }, "provider.base_url", `got "ftp://u:xxxxx@x"`},
		{"url with a space", func(c *config.Config) { c.Provider.BaseURL = "https://api.example.com/ v1" }, "provider.base_url", "must not contain spaces"},
		{"url of the endpoint", func(c *config.Config) { c.Provider.BaseURL = "https://api.example.com/v1/chat/completions" }, "provider.base_url",
			`not the endpoint itself, got "https://api.example.com/v1/chat/completions"`},
		{"url of the endpoint names the base", func(c *config.Config) { c.Provider.BaseURL = "http://localhost:8080/v1/chat/completions/" }, "provider.base_url",
			`(e.g. "http://localhost:8080/v1")`},
		{"headers", func(c *config.Config) { c.Provider.Headers = config.Headers{"X-Gateway-Key": "k\tv", "x-tags": "a=b"} }, "", ""},
		{"header name", func(c *config.Config) { c.Provider.Headers = config.Headers{"X Key": "v"} }, `provider.headers."X Key"`, "must be named with an HTTP header name"},
		{"reserved header", func(c *config.Config) { c.Provider.Headers = config.Headers{"authorization": "Bearer hunter2"} }, "provider.headers.authorization", "is set by Rebound"},
		// One HTTP header: which value went was a draw of Go's map order.
		{"header named twice", func(c *config.Config) {
			c.Provider.Headers = config.Headers{"X-Gateway-Key": "a", "x-gateway-key": "b"}
		}, "provider.headers.x-gateway-key", "is the same header as provider.headers.X-Gateway-Key"},
		{"limit scope", func(c *config.Config) { c.Provider.LimitScope = "org" }, "provider.limit_scope", `must be model or key, got "org"`},
		{"max in flight without sharing", func(c *config.Config) { c.Provider.MaxInFlight = 2; c.Provider.ShareLimits = false }, "provider.max_in_flight", "needs provider.share_limits = true"},
		{"max in flight", func(c *config.Config) { c.Provider.MaxInFlight = -1 }, "provider.max_in_flight", "must be between 0 (no cap) and 1000, got -1"},
		{"url with a query", func(c *config.Config) { c.Provider.BaseURL = "https://api.example.com/v1?key=x" }, "provider.base_url", "must not have a query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error on %s", tt.wantKey)
			}
			if !strings.HasPrefix(err.Error(), tt.wantKey+": ") || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Validate() = %q, want %q and %q", err, tt.wantKey+": ", tt.wantMsg)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Validate() = %q, leaks the URL's password", err)
			}
		})
	}
}

func TestConfig_Validate_ReportsAll(t *testing.T) {
	c := config.Default()
	c.Provider.MaxTokens = -5
	c.Recovery.Jitter = 2
	err := c.Validate()
	for _, want := range []string{"provider.max_tokens", "recovery.jitter"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
}

func TestDuration_Text(t *testing.T) {
	tests := []struct {
		in      string
		want    config.Duration
		wantErr bool
	}{
		{"500ms", config.Duration(500 * time.Millisecond), false},
		{"1m30s", config.Duration(90 * time.Second), false},
		{"0", 0, false},
		{"5 parsecs", 0, true},
		{"500", 0, true},
	}
	for _, tt := range tests {
		var d config.Duration
		err := d.UnmarshalText([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("UnmarshalText(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if d != tt.want {
			t.Errorf("UnmarshalText(%q) = %v, want %v", tt.in, d, tt.want)
		}
	}
}

func TestDuration_JSON(t *testing.T) {
	r := config.Default().Recovery
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"initial_delay":"500ms"`, `"attempt_timeout":"0s"`, `"request_deadline":"5m0s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json.Marshal(Recovery) = %s, want it to contain %s", b, want)
		}
	}
	var back config.Recovery
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestConfig_JSONKeys(t *testing.T) {
	c := config.Default()
	c.Provider.APIKey = "sk-secret"
	c.Source = "/x/config.toml"
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"provider":{`, `"base_url":`, `"api_key_env":`, `"max_tokens":8192`, `"recovery":{`, `"retryable_codes":[`, `"log_level":"info"`, `"state_dir":""`} {
		if !strings.Contains(s, want) {
			t.Errorf("json.Marshal(Config) = %s, want %s", s, want)
		}
	}
	for _, bad := range []string{"sk-secret", "/x/config.toml", "APIKey", "Source"} {
		if strings.Contains(s, bad) {
			t.Errorf("json.Marshal(Config) = %s, must not contain %s", s, bad)
		}
	}
}

func TestConfig_StringRedactsKey(t *testing.T) {
	const secret = "sk-this-is-secret"
	c := config.Default()
	c.Provider.APIKey = secret
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{c, &c, c.Provider, &c.Provider} {
			got := fmt.Sprintf(format, v)
			if strings.Contains(got, secret) {
				t.Errorf("Sprintf(%q, %T) = %s, leaks the API key", format, v, got)
			}
			if !strings.Contains(got, "gpt-4o-mini") {
				t.Errorf("Sprintf(%q, %T) = %s, want the model in it", format, v, got)
			}
		}
	}
	if got := fmt.Sprintf("%+v", c); !strings.Contains(got, "APIKey:[redacted]") || !strings.Contains(got, "InitialDelay:500ms") {
		t.Errorf("Sprintf(%%+v) = %s, want APIKey:[redacted] and InitialDelay:500ms", got)
	}
	if got := fmt.Sprintf("%#v", c); !strings.HasPrefix(got, "config.Config{") {
		t.Errorf("Sprintf(%%#v) = %s, want it to start with config.Config{", got)
	}
}

// TestConfig_HeadersNeverShown: provider.headers' values (a gateway's key)
// appear in no printing of the config, its JSON, or a validation error.
func TestConfig_HeadersNeverShown(t *testing.T) {
	const secret = "gw-secret-value-42"
	c := config.Default()
	c.Provider.Headers = config.Headers{"X-Gateway-Key": secret}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{c, &c, c.Provider, &c.Provider, c.Provider.Headers} {
			if got := fmt.Sprintf(format, v); strings.Contains(got, secret) || !strings.Contains(got, "X-Gateway-Key") {
				t.Errorf("Sprintf(%q, %T) = %s: want the name, not the value", format, v, got)
			}
		}
	}
	b, err := json.Marshal(c)
	if err != nil || strings.Contains(string(b), secret) {
		t.Errorf("json.Marshal(Config) = %s, %v: leaks a header value", b, err)
	}
	for _, bad := range []string{secret + "\r\nX-Injected: 1", secret + "\n", secret + "\x00", strings.Repeat(secret, 1000)} {
		c.Provider.Headers = config.Headers{"X-Gateway-Key": bad}
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "provider.headers.X-Gateway-Key: ") {
			t.Errorf("Validate(%q) = %v, want an error on the header", bad, err)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("Validate() = %q, leaks the value", err)
		}
	}
}
