package release_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/release"
)

// The test binary doubles as the agent under check: with fakeAgentEnv set
// it behaves as that variable says instead of running the tests.
const fakeAgentEnv = "REBOUND_RELEASE_FAKE_AGENT"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	os.Exit(m.Run())
}

// fakeAgent answers the registry's initialize as mode says. Modes that
// check what the validator sends answer with an error when it is wrong.
func fakeAgent(mode string) int {
	switch mode {
	case "exit1":
		fmt.Fprintln(os.Stderr, "fake: failing")
		return 1
	case "hang":
		time.Sleep(time.Hour)
		return 0
	case "eof":
		// Exits 0 once stdin is at its end, and fails if stdin is open.
		got := make(chan error, 1)
		go func() { _, err := io.ReadAll(os.Stdin); got <- err }()
		select {
		case err := <-got:
			if err != nil {
				return 3
			}
			return 0
		case <-time.After(time.Second): // before LaunchCheck's time is up
			fmt.Fprintln(os.Stderr, "fake: stdin is still open")
			return 4
		}
	case "silent":
		io.ReadAll(os.Stdin)
		return 0
	}
	line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
	if err != nil {
		return 5
	}
	var req struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params struct {
			ClientInfo struct {
				Name string `json:"name"`
			} `json:"clientInfo"`
			ClientCapabilities struct {
				Meta map[string]any `json:"_meta"`
			} `json:"clientCapabilities"`
		} `json:"params"`
	}
	reply := func(v string) int {
		fmt.Printf(`{"jsonrpc":"2.0","id":1,%s}`+"\n", v)
		io.ReadAll(os.Stdin) // until terminated
		return 0
	}
	if err := json.Unmarshal(line, &req); err != nil || req.Method != "initialize" || req.ID != 1 ||
		req.Params.ClientInfo.Name != "ACP Registry Validator" || req.Params.ClientCapabilities.Meta["terminal-auth"] != true {
		return reply(fmt.Sprintf(`"error":{"code":-32602,"message":%q}`, "not the validator's initialize: "+string(line)))
	}
	switch mode {
	case "env":
		// Only the validator's environment: its HOME and TERM, and nothing
		// of the caller's own.
		var wrong []string
		if os.Getenv("TERM") != "dumb" {
			wrong = append(wrong, "TERM="+os.Getenv("TERM"))
		}
		if h := os.Getenv("HOME"); !strings.HasSuffix(h, "auth-home") {
			wrong = append(wrong, "HOME="+h)
		}
		if v, ok := os.LookupEnv("REBOUND_RELEASE_SECRET"); ok {
			wrong = append(wrong, "REBOUND_RELEASE_SECRET="+v)
		}
		if len(wrong) > 0 {
			return reply(fmt.Sprintf(`"error":{"code":-32603,"message":%q}`, strings.Join(wrong, " ")))
		}
		return reply(`"result":{"protocolVersion":1,"authMethods":[{"id":"login","name":"Log in"}],"agentInfo":{"name":"fake","version":"1.0.0"}}`)
	case "agent":
		return reply(`"result":{"protocolVersion":1,"authMethods":[{"id":"key","name":"Key","type":"env_var"},{"id":"login","name":"Log in"}]}`)
	case "terminal-meta":
		return reply(`"result":{"protocolVersion":1,"authMethods":[{"id":"t","name":"T","_meta":{"terminal-auth":{"command":"x"}}}]}`)
	case "env-var-only":
		return reply(`"result":{"protocolVersion":1,"authMethods":[{"id":"key","name":"Key","type":"env_var"}]}`)
	case "none":
		return reply(`"result":{"protocolVersion":1,"authMethods":[]}`)
	case "error":
		return reply(`"error":{"code":-32603,"message":"broken"}`)
	case "noise":
		fmt.Println("starting up...")
		return reply(`"result":{"protocolVersion":1,"authMethods":[{"id":"login","name":"Log in"}]}`)
	}
	return 6
}

func fakeLaunch(t *testing.T, mode string) release.Launch {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return release.Launch{Path: exe, Dir: t.TempDir(), Env: map[string]string{fakeAgentEnv: mode}}
}

func TestAuthCheck(t *testing.T) {
	t.Setenv("REBOUND_RELEASE_SECRET", "must not reach the agent")
	t.Setenv("TERM", "xterm")
	for _, tc := range []struct {
		mode string
		want string // part of the error; "" for success
		// The check's time: a case that answers has the generous one
		// (it never waits it out); one that must time out, a short one.
		timeout time.Duration
	}{
		{"env", "", 5 * time.Second},
		{"agent", "", 5 * time.Second},
		{"terminal-meta", "", 5 * time.Second},
		{"env-var-only", "no auth method of type agent or terminal", 5 * time.Second},
		{"none", "lists no authMethods", 5 * time.Second},
		{"error", "initialize failed", 5 * time.Second},
		{"noise", "something other than a JSON-RPC message", 5 * time.Second},
		{"silent", "no initialize response within 300ms", 300 * time.Millisecond},
		{"exit1", "stdout closed before the initialize response", 5 * time.Second},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			res, err := release.AuthCheck(t.Context(), fakeLaunch(t, tc.mode), t.TempDir(), tc.timeout)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error = %v, want one containing %q (methods %v)", err, tc.want, res.Methods)
			}
		})
	}
}

func TestAuthCheck_TypesAsTheRegistryInfersThem(t *testing.T) {
	res, err := release.AuthCheck(t.Context(), fakeLaunch(t, "agent"), t.TempDir(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []release.AuthMethod{{ID: "key", Type: "env_var"}, {ID: "login", Type: "agent"}}
	if fmt.Sprint(res.Methods) != fmt.Sprint(want) {
		t.Errorf("methods = %v, want %v", res.Methods, want)
	}
}

func TestLaunchCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode    string
		want    string
		timeout time.Duration // waited out only by hang, which is why it is short there
	}{
		{"eof", "", 3 * time.Second},         // exits 0 once it sees stdin closed
		{"hang", "", 300 * time.Millisecond}, // still running when the time is up
		{"exit1", "exited within", 3 * time.Second},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			err := release.LaunchCheck(ctx, fakeLaunch(t, tc.mode), tc.timeout)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
