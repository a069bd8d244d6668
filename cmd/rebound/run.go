package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// env is what run reads from the process environment; tests supply their own.
type env struct {
	getenv func(string) string
	home   string
	// httpClient, when set, carries every provider request (tests use the
	// in-memory mock provider here).
	httpClient llm.HTTPDoer
	// mcpConnect, when set, connects every MCP server (tests serve them in
	// process).
	mcpConnect func(context.Context, mcp.Spec) (mcp.Transport, error)
	// executable is os.Executable: the binary an editor's terminal sign-in
	// runs `login` with (loginCommand). Nil or failing leaves it out.
	executable func() (string, error)
	// gates, when set, are the shared rate-limit gates (tests script them).
	gates func(model string) recovery.Gate
	// dial, when set, replaces the dialer of every HTTP connection (tests:
	// a network of local addresses only).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func osEnv() env {
	home, _ := os.UserHomeDir()
	return env{getenv: os.Getenv, home: home, executable: os.Executable}
}

// loginCommand is the sign-in command a client runs from the terminal
// method's _meta: this binary's absolute path, `login`, and what decides
// where `rebound login` stores the key, as this Rebound sees it (an
// editor's terminal has its own environment, not the agent's): the config
// file read (source, which may name provider.api_key_env, however it was
// chosen: --config, REBOUND_CONFIG or the default) and XDG_CONFIG_HOME.
func loginCommand(log zerolog.Logger, e env, source string) acp.TerminalAuthMeta {
	if e.executable == nil {
		return acp.TerminalAuthMeta{}
	}
	path, err := e.executable()
	if err == nil && !filepath.IsAbs(path) {
		err = fmt.Errorf("not an absolute path: %q", path)
	}
	if err != nil {
		log.Warn().Err(err).Msg("the terminal sign-in's command is unknown: clients that need it get only the api-key method")
		return acp.TerminalAuthMeta{}
	}
	vars := map[string]string{}
	if source != "" {
		// The terminal may start in another directory.
		if abs, err := filepath.Abs(source); err == nil {
			source = abs
		}
		vars[config.EnvConfig] = source
	}
	if v := e.getenv("XDG_CONFIG_HOME"); v != "" {
		vars["XDG_CONFIG_HOME"] = v
	}
	return agent.LoginCommand(path, vars)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(ctx, args, stdin, stdout, stderr, osEnv())
}

// streams are a command's standard streams; tests pass pipes and buffers.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand of the rebound binary. Each lives in its own
// file and registers itself, so the dispatcher needs no edit to grow.
type command struct {
	name    string
	summary string // one line for `rebound --help`
	run     func(ctx context.Context, args []string, s streams, e env) int
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

func init() {
	register(command{name: "serve", summary: "serve ACP on stdin/stdout (the default)", run: runServe})
}

const serveUsage = `Usage: rebound [serve] [flags]
       rebound <command> [flags]

Rebound is an Agent Client Protocol (ACP) agent. An editor such as Zed starts
it and speaks JSON-RPC with it over stdin and stdout; it runs each turn against
an OpenAI-compatible model provider, reads, edits and runs things in the project
with the user's permission, and recovers from the provider's failures.

Commands:
%s
Environment:
  OPENAI_BASE_URL     provider base URL (default https://api.openai.com/v1)
  OPENAI_API_KEY      provider API key (provider.api_key_env names another variable);
                      without it, the key 'rebound login' stored is used
  REBOUND_MODEL       model name
  REBOUND_STATE_DIR   where session logs are kept (default ~/.local/state/rebound)
  REBOUND_CONFIG      TOML config file (default ~/.config/rebound/config.toml)
  REBOUND_LOG_LEVEL   debug, info, warn or error (default info)
  REBOUND_STREAMING   live (replies stream) or held (a reply shows once finished) (default live)

Flags override the environment, which overrides the config file.
Run 'rebound <command> --help' for a command's own flags.

Flags of serve:
`

func commandList() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-14s %s\n", n, commands[n].summary)
	}
	return b.String()
}

// runEnv dispatches to a subcommand; without one, rebound serves, which is
// what an editor that spawns it expects.
func runEnv(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	s := streams{in: stdin, out: stdout, err: stderr}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c, ok := commands[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "rebound: unknown command %q\n\nCommands:\n%s", args[0], commandList())
			return refuseStart(ctx, s, unknownCommandError(args[0]))
		}
		return c.run(ctx, args[1:], s, e)
	}
	return runServe(ctx, args, s, e)
}

func runServe(ctx context.Context, args []string, s streams, e env) int {
	fs := flag.NewFlagSet("rebound", flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), serveUsage, commandList())
		fs.PrintDefaults()
	}
	given := config.RegisterFlags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return refuseStart(ctx, s, commandLineError(fs, err))
	}
	if *showVersion {
		return printVersion(s)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(s.err, "rebound: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return refuseStart(ctx, s, commandLineError(fs, fmt.Errorf("unexpected argument %q", text.ClipChars(fs.Arg(0), 40))))
	}
	cfg, err := config.Load(given(), e.getenv, e.home)
	if err != nil {
		fmt.Fprintf(s.err, "rebound: %v\n", err)
		// An editor may show nothing of stderr: the error is served to it
		// too (badconfig.go), and the exit still says it failed.
		if serr := serveBadConfig(ctx, err, s.in, s.out, newLogger(s.err, "")); serr != nil && ctx.Err() == nil {
			fmt.Fprintf(s.err, "rebound: %v\n", serr)
		}
		return 1
	}
	log := newLogger(s.err, cfg.LogLevel)
	err = serve(ctx, cfg, s.in, s.out, log, e)
	switch {
	case ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())):
		// Asked to stop (SIGTERM or SIGINT in main): running turns were
		// answered as cancelled and the session logs are closed; output an
		// editor no longer reads was dropped after a bounded wait, and
		// logged. That is a clean stop.
		log.Info().Str("reason", context.Cause(ctx).Error()).Msg("stopped")
		return 0
	case err != nil:
		log.Error().Err(err).Msg("server stopped")
		return 1
	}
	return 0
}

func newLogger(w io.Writer, level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

// serve wires the provider, the agent and the ACP server and runs until the
// editor closes stdin or ctx ends.
func serve(ctx context.Context, cfg config.Config, stdin io.Reader, stdout io.Writer, log zerolog.Logger, e env) error {
	netClient, mcpHTTP, err := netTransports(cfg, e)
	if err != nil {
		return err
	}
	base := e.httpClient
	if base == nil {
		base = netClient
	}
	httpClient, gates := providerHTTP(cfg, base, log)
	providerLog := log.With().Str("component", "provider").Logger()
	openAI := func(key string) llm.Provider {
		return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: cfg.Provider.BaseURL, APIKey: key, HTTPClient: httpClient,
			Continuation: llm.Continuation(cfg.Provider.Continuation), StreamUsage: llm.StreamUsage(cfg.Provider.StreamUsage),
			Logger: &providerLog})
	}
	var keys usedKeys
	use := func(key string) llm.Provider {
		keys.add(key)
		gates.useKey(key)
		return openAI(key)
	}
	// The key's variable, which a sign-in in the editor may change (signin.go).
	keyEnv := &keyName{name: cfg.Provider.APIKeyEnv}
	newProvider := keyEnv.newProvider(e, use)
	provider, err := newProvider()
	if err != nil {
		// Not fatal: a prompt says the same, where an editor shows it.
		log.Warn().Err(err).Msg("no usable API key")
	}
	a := agent.New(agent.Config{
		StateDir:     cfg.StateDir,
		StateDirHelp: cfg.StateDirHelp(),
		Model:        cfg.Provider.Model,
		ModelFrom:    cfg.ModelFrom,
		MaxTokens:    cfg.Provider.MaxTokens,
		Provider:     provider,
		APIKeyEnv:    cfg.Provider.APIKeyEnv,
		NewProvider:  newProvider,
		Login:        loginCommand(log, e, cfg.Source),
		Recovery:     recoveryConfig(cfg.Recovery),
		Gates:        gates.gate(e.gates),
		Truncation: recovery.Truncation{
			EscalatedMaxTokens: cfg.Recovery.Truncation.EscalatedMaxTokens,
			MaxContinuations:   cfg.Recovery.Truncation.MaxContinuations,
		},
		Overflow:    agent.Overflow{KeepRecentMessages: cfg.Recovery.Overflow.KeepRecentMessages, CompactAt: compactAt(cfg.Recovery.Overflow)},
		Live:        cfg.Agent.Streaming == config.StreamingLive,
		MaxRequests: cfg.Agent.MaxSteps,
		Tools: agent.Tools{
			CommandTimeout:    time.Duration(cfg.Tools.CommandTimeout),
			MaxCommandTimeout: time.Duration(cfg.Tools.MaxCommandTimeout),
			OutputLimit:       cfg.Tools.OutputLimit,
		},
		Instructions:        cfg.Agent.Instructions,
		ReplaceInstructions: cfg.Agent.ReplaceInstructions,
		DefaultMode:         cfg.Agent.DefaultMode,
		WaitStatus:          cfg.Agent.WaitStatus,
		Models:              cfg.Provider.Models,
		ReasoningEffort:     cfg.Provider.ReasoningEffort,
		ContextWindow:       uint64(cfg.Provider.ContextWindow), // validated ≥ 0
		Prices:              agent.Prices{Input: cfg.Provider.PriceInput, CachedInput: cfg.Provider.PriceCachedInput, Output: cfg.Provider.PriceOutput, Currency: cfg.Provider.Currency},
		MCPConnect:          e.mcpConnect,
		MCPHTTP:             mcpHTTP,
		Secrets:             func() proc.Secrets { return childSecrets(keyEnv.all(), e, &keys) },
		Routes:              httpClient,
		SetUp:               &editorSetUp{cfg: cfg, e: e, list: base, routes: httpClient, key: keyEnv, use: use},
		Version:             version(),
		Logger:              log.With().Str("component", "agent").Logger(),
	})
	defer a.Close()
	// The ACP logout does what `rebound logout` does.
	a.SetForgetKey(func() (agent.Forgotten, error) { return forgetKey(keyEnv.get(), e) })
	srv := acp.NewServer(a, acp.Config{Version: version(), Logger: log, CapabilitiesMeta: agent.CapabilitiesMeta(),
		McpCapabilities: &acp.McpCapabilities{HTTP: true, SSE: true}})
	log.Debug().Str("model", cfg.Provider.Model).Str("baseURL", cfg.Provider.BaseURL).Str("stateDir", cfg.StateDir).
		Bool("apiKey", provider != nil).Msg("serving ACP on stdio")
	return srv.Serve(ctx, stdin, stdout)
}

// forgetKey removes the key `rebound login` stored for the variable name,
// as `rebound logout` does for the configuration already loaded.
func forgetKey(name string, e env) (agent.Forgotten, error) {
	f := agent.Forgotten{Name: name, Path: config.CredentialsPath(e.getenv, e.home)}
	if f.Path == "" {
		return f, nil // nowhere to store one, so none is stored
	}
	var err error
	f.Removed, err = config.RemoveAPIKey(f.Path, name)
	return f, err
}

// usedKeys are the API keys providers were made from.
type usedKeys struct {
	mu   sync.Mutex
	keys []string
}

func (u *usedKeys) add(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.keys, key) {
		u.keys = append(u.keys, key)
	}
}

// childSecrets is what commands run on this machine and stdio MCP servers
// must not inherit from Rebound's environment: the variables named (names:
// provider.api_key_env, and any a sign-in in the editor chose since), and
// under any name the keys they hold, the keys stored for them, and every
// key used since start-up (a variable such as
// OPENAI_KEY or AUTH="Bearer sk-…" may repeat one). Rebound has no
// credential variables of its own.
func childSecrets(names []string, e env, used *usedKeys) proc.Secrets {
	var values []string
	path := config.CredentialsPath(e.getenv, e.home)
	for _, name := range names {
		values = append(values, e.getenv(name))
		if path != "" {
			if stored, err := config.ReadAPIKey(path, name); err == nil {
				values = append(values, stored)
			}
		}
	}
	used.mu.Lock()
	values = append(values, used.keys...)
	used.mu.Unlock()
	return proc.Secrets{Names: names, Values: values}
}

// release is the version of Rebound's current release. agent.json, the
// manifest the ACP agent registry lists Rebound by, gives the same version
// and downloads of that release (TestAgentManifest keeps them in step): to
// release, bump both, then tag the commit v<release>.
const release = "0.1.0"

// version is what Rebound reports (agentInfo, session logs, --version): the
// tag's version when built from a module tagged vX.Y.Z (`go install
// …@v0.1.0`, or a build of a checkout at that tag), else "<release>-dev",
// with "+" and the VCS revision when it is known.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return release + "-dev"
	}
	if v, ok := strings.CutPrefix(bi.Main.Version, "v"); ok && releaseTag.MatchString(v) {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return release + "-dev+" + s.Value[:12]
		}
	}
	// A pseudo-version (`go install …@main`) ends in the revision.
	if m := pseudoRevision.FindStringSubmatch(bi.Main.Version); m != nil {
		return release + "-dev+" + m[1]
	}
	return release + "-dev"
}

var (
	releaseTag     = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	pseudoRevision = regexp.MustCompile(`-([0-9a-f]{12})(\+incompatible)?$`)
)

// compactAt is the fill at which the agent compacts before a request:
// none when compaction on overflow is turned off, whose user asked for no
// summaries.
func compactAt(o config.Overflow) float64 {
	if !o.Enabled {
		return 0
	}
	return o.CompactAt
}

func recoveryConfig(r config.Recovery) recovery.Config {
	codes := make([]recovery.Code, len(r.RetryableCodes))
	for i, c := range r.RetryableCodes {
		codes[i] = recovery.Code(c)
	}
	var rules []recovery.Rule
	for _, rule := range r.Rules {
		action := recovery.ActionNone
		if rule.Action == "strip_images" {
			action = recovery.ActionStripImages
		}
		rules = append(rules, recovery.Rule{Match: rule.Match, Delay: time.Duration(rule.Delay), MaxRetries: rule.MaxRetries, Action: action})
	}
	return recovery.Config{
		Policy: recovery.Policy{
			MaxRetries:    r.MaxRetries,
			InitialDelay:  time.Duration(r.InitialDelay),
			MaxDelay:      time.Duration(r.MaxDelay),
			Jitter:        r.Jitter,
			JitterMode:    r.JitterMode,
			MaxRetryAfter: time.Duration(r.MaxRetryAfter),
			Retryable:     codes,
		},
		Rules:           rules,
		Overflow:        r.Overflow.Enabled,
		FallbackModel:   r.FallbackModel,
		FallbackAfter:   r.OverloadFallbackAfter,
		RequestDeadline: time.Duration(r.RequestDeadline),
		AttemptTimeout:  time.Duration(r.AttemptTimeout),
		Watchdog:        recovery.Timeouts{FirstToken: time.Duration(r.FirstTokenTimeout), Idle: time.Duration(r.StreamIdleTimeout)},
	}
}
