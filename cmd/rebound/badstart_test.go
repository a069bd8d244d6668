package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/config"
)

// serveLines runs rebound with args and environment getenv as an editor
// would (stdin a pipe), sends lines, and returns the answers by id once
// want of them came, the exit code and stderr. The input stays open until
// then: at its end a running prompt would be answered as cancelled.
func serveLines(t *testing.T, args []string, getenv func(string) string, lines []string, want int) (answers map[float64]map[string]any, code int, stderr string) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runEnv(t.Context(), args, inR, outW, &errOut, env{getenv: getenv, home: t.TempDir()})
		outW.Close()
	}()
	go io.WriteString(inW, strings.Join(lines, "\n")+"\n")
	answers = map[float64]map[string]any{}
	sc := bufio.NewScanner(outR)
	for len(answers) < want && sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		if id, ok := m["id"].(float64); ok {
			answers[id] = m
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	return answers, <-done, errOut.String()
}

// serveArgs is serveLines with initialize and session/new, and no environment.
func serveArgs(t *testing.T, args []string) (init, sessNew map[string]any, code int, stderr string) {
	t.Helper()
	answers, code, stderr := serveLines(t, args, func(string) string { return "" }, []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/user/project","mcpServers":[]}}`,
	}, 2)
	return answers[0], answers[1], code, stderr
}

// A command line serve does not take reaches the editor as a bad config
// does: initialize is answered and names it, what follows fails with it,
// and the exit code is still the usage error's.
func TestServe_BadCommandLineReachesTheEditor(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--modle", "gpt-4o"}, []string{"flag provided but not defined: -modle", "did you mean --model?"}},
		{[]string{"acp"}, []string{`unknown command "acp"`, "flags only", "inspect"}},
		{[]string{"--model", "gpt-4o", "acp"}, []string{`unexpected argument "acp"`}},
		{[]string{"--streaming"}, []string{"flag needs an argument: -streaming"}},
		{[]string{"--version=maybe"}, []string{"invalid boolean value"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			init, sessNew, code, stderr := serveArgs(t, c.args)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (a usage error)", code)
			}
			result, _ := init["result"].(map[string]any)
			if result == nil {
				t.Fatalf("initialize answered %v, want a result", init)
			}
			meta, _ := result["agentCapabilities"].(map[string]any)["_meta"].(map[string]any)
			text, _ := meta[configErrorMetaKey].(string)
			for _, w := range append(c.want, "the agent's command line") {
				if !strings.Contains(text, w) {
					t.Errorf("initialize's _meta[%s] = %q, want it to say %q", configErrorMetaKey, text, w)
				}
			}
			e, _ := sessNew["error"].(map[string]any)
			if e == nil || e["message"] != text || e["code"] != float64(codeConfigError) {
				t.Errorf("session/new answered %v, want the error %q", sessNew, text)
			}
			if !strings.Contains(stderr, "rebound") {
				t.Errorf("stderr says nothing: %q", stderr)
			}
		})
	}
}

// In a terminal (here: no stdin to serve on) a bad command line prints its
// usage and exits at once, as before: nothing waits for JSON-RPC.
func TestServe_BadCommandLineWithoutAnEditorExitsAtOnce(t *testing.T) {
	for _, args := range [][]string{{"--modle", "x"}, {"acp"}, {"--model", "x", "extra"}} {
		var out, errOut bytes.Buffer
		if code := runEnv(t.Context(), args, nil, &out, &errOut, env{getenv: func(string) string { return "" }, home: t.TempDir()}); code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
		if out.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing", args, out.String())
		}
	}
}

// Property: any flag name one edit from a flag serve takes is named back
// as that flag.
func TestCommandLineError_SuggestsTheFlagMeant(t *testing.T) {
	fs := flag.NewFlagSet("rebound", flag.ContinueOnError)
	config.RegisterFlags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	r := rand.New(rand.NewPCG(1, 2))
	letters := "abcdefghijklmnopqrstuvwxyz-"
	for range 500 {
		name := names[r.IntN(len(names))]
		b := []byte(name)
		i := r.IntN(len(b))
		switch r.IntN(3) {
		case 0: // replace
			b[i] = letters[r.IntN(len(letters))]
		case 1: // delete
			b = append(b[:i], b[i+1:]...)
		default: // insert
			b = append(b[:i], append([]byte{letters[r.IntN(len(letters))]}, b[i:]...)...)
		}
		typo := string(b)
		if fs.Lookup(typo) != nil || typo == "" {
			continue
		}
		err := fs.Parse([]string{"--" + typo})
		if err == nil {
			t.Fatalf("--%s parsed", typo)
		}
		got := commandLineError(fs, err).Error()
		if near := closestFlag(fs, typo); near == "" || !strings.Contains(got, "did you mean --"+near+"?") {
			t.Errorf("--%s: %q, want a suggestion", typo, got)
		}
	}
}
