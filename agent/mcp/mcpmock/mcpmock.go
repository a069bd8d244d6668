// Package mcpmock is a small MCP server for tests: of Rebound's MCP client
// (agent/mcp) and of the rebound binary. It serves over any go-sdk
// transport, in process (NewServer, Serve) or as a subprocess on stdio
// (Main).
//
// A test binary becomes an MCP server by re-executing itself. In the
// package's tests:
//
//	func TestMain(m *testing.M) {
//		if os.Getenv(mcpmock.EnvServe) == "1" {
//			mcpmock.Main() // does not return
//		}
//		os.Exit(m.Run())
//	}
//
// and a stdio server spec is then the test binary (os.Executable) with
// EnvServe=1 in its environment, plus any of the Env* options below.
//
// Tools:
//   - echo {text}: returns text.
//   - fail {message}: returns a tool error (isError) with message.
//   - big {bytes}: returns that many bytes of text, starting "BEGIN" and
//     ending "END".
//   - slow {ms}: waits ms milliseconds, or until the call is cancelled.
//   - mixed: returns text, an image, a resource link and an embedded
//     resource.
//   - rpcerror: answers with a JSON-RPC error, not a result.
//   - pid: returns the server's process ID.
//   - crash: writes "mcpmock: crashing as asked" to stderr and exits with
//     status 3 (subprocess only).
//   - spawn: starts a child process that sleeps until killed, in the
//     server's process group, and returns its pid (subprocess only).
//   - spawn_detached: the same, but the child is in a session of its own
//     (setsid), out of reach of signals to the server's process group
//     (subprocess only).
//   - env: returns the server's environment, one variable a line
//     (subprocess only).
package mcpmock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables read by Main.
const (
	// EnvServe set to "1" tells a test binary's TestMain to call Main.
	EnvServe = "REBOUND_MCPMOCK"
	// EnvExitAtOnce set to "1": write "mcpmock: exiting at once as asked"
	// to stderr and exit with status 1 before reading anything.
	EnvExitAtOnce = "REBOUND_MCPMOCK_EXIT_AT_ONCE"
	// EnvSilent set to "1": never answer anything; run until killed.
	EnvSilent = "REBOUND_MCPMOCK_SILENT"
	// EnvLinger set to "1": ignore SIGTERM and the end of stdin; only
	// SIGKILL stops the server.
	EnvLinger = "REBOUND_MCPMOCK_LINGER"
	// EnvPIDFile names a file to write the server's pid to, first thing.
	EnvPIDFile = "REBOUND_MCPMOCK_PIDFILE"
	// EnvExtraTools is a number of extra tools, extra_000, extra_001, …
	EnvExtraTools = "REBOUND_MCPMOCK_EXTRA_TOOLS"
	// EnvHugeSchema set to "1" adds huge_schema, a tool whose input schema
	// has more than 100 KiB.
	EnvHugeSchema = "REBOUND_MCPMOCK_HUGE_SCHEMA"
	// EnvPageSize is the number of tools per tools/list page.
	EnvPageSize = "REBOUND_MCPMOCK_PAGE_SIZE"
)

// Options shape the server.
type Options struct {
	ExtraTools int  // extra_000 … tools that do nothing
	HugeSchema bool // add huge_schema
	PageSize   int  // tools per tools/list page; zero: the SDK's default
	// Subprocess enables crash and spawn, which act on the whole process:
	// only a server of its own may do that.
	Subprocess bool
}

// NewServer returns the mock server.
func NewServer(opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpmock", Version: "1"}, &mcp.ServerOptions{PageSize: opts.PageSize})

	type echoArgs struct {
		Text string `json:"text" jsonschema:"the text to return"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text argument."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})

	type failArgs struct {
		Message string `json:"message,omitempty" jsonschema:"the error message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fails with a tool error."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failArgs) (*mcp.CallToolResult, any, error) {
			msg := in.Message
			if msg == "" {
				msg = "failed as asked"
			}
			res := text(msg)
			res.IsError = true
			return res, nil, nil
		})

	type bigArgs struct {
		Bytes int `json:"bytes" jsonschema:"the size of the text to return"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns that many bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigArgs) (*mcp.CallToolResult, any, error) {
			return text(Big(in.Bytes)), nil, nil
		})

	type slowArgs struct {
		Ms int `json:"ms" jsonschema:"how long to wait, in milliseconds"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Waits, then answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
			t := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return text("slept"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})

	mcp.AddTool(s, &mcp.Tool{Name: "mixed", Description: "Returns content of several kinds."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "some text"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
				&mcp.ResourceLink{URI: "file:///tmp/a.txt", Name: "a.txt", MIMEType: "text/plain"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///tmp/b.txt", MIMEType: "text/plain", Text: "embedded text"}},
			}}, nil, nil
		})

	s.AddTool(&mcp.Tool{Name: "rpcerror", Description: "Answers with a JSON-RPC error.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("protocol failure as asked")
		})

	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's process ID."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})

	if opts.Subprocess {
		mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits with status 3."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				fmt.Fprintln(os.Stderr, "mcpmock: crashing as asked")
				os.Exit(3)
				return nil, nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Starts a child that sleeps until killed; returns its pid."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				pid, err := spawn(false)
				if err != nil {
					return nil, nil, err
				}
				return text(strconv.Itoa(pid)), nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "spawn_detached", Description: "Starts a child in a session of its own that sleeps until killed; returns its pid."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				pid, err := spawn(true)
				if err != nil {
					return nil, nil, err
				}
				return text(strconv.Itoa(pid)), nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns the server's environment."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return text(strings.Join(os.Environ(), "\n")), nil, nil
			})
	}

	for i := range opts.ExtraTools {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("extra_%03d", i), InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("extra"), nil })
	}
	if opts.HugeSchema {
		schema := fmt.Sprintf(`{"type":"object","description":%q}`, strings.Repeat("x", 100<<10))
		s.AddTool(&mcp.Tool{Name: "huge_schema", InputSchema: json.RawMessage(schema)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("huge"), nil })
	}
	return s
}

// Big is what the big tool returns for n bytes.
func Big(n int) string {
	if n < len("BEGINEND") {
		return strings.Repeat("x", max(n, 0))
	}
	return "BEGIN" + strings.Repeat("x", n-len("BEGINEND")) + "END"
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// spawn starts this executable again as a silent server: a child that
// sleeps until killed, with no dependency on a sleep command. A detached
// one is in a session of its own.
func spawn(detached bool) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), EnvServe+"=1", EnvSilent+"=1", EnvPIDFile+"=", EnvLinger+"=1")
	if detached {
		detach(cmd)
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go cmd.Wait() // reap it if it dies first
	return cmd.Process.Pid, nil
}

// Serve runs the mock server on t until the client disconnects or ctx is
// done.
func Serve(ctx context.Context, t mcp.Transport, opts Options) error {
	return NewServer(opts).Run(ctx, t)
}

// Main serves on stdin and stdout, with options from the environment (the
// Env* constants), and exits. It is meant for a TestMain; see the package
// documentation.
func Main() {
	if f := os.Getenv(EnvPIDFile); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mcpmock:", err)
			os.Exit(2)
		}
	}
	if os.Getenv(EnvExitAtOnce) == "1" {
		fmt.Fprintln(os.Stderr, "mcpmock: exiting at once as asked")
		os.Exit(1)
	}
	linger := os.Getenv(EnvLinger) == "1"
	if linger {
		signal.Ignore(syscall.SIGTERM)
	}
	if os.Getenv(EnvSilent) == "1" {
		sleepForever()
	}
	extra, _ := strconv.Atoi(os.Getenv(EnvExtraTools))
	pageSize, _ := strconv.Atoi(os.Getenv(EnvPageSize))
	opts := Options{
		ExtraTools: extra,
		HugeSchema: os.Getenv(EnvHugeSchema) == "1",
		PageSize:   pageSize,
		Subprocess: true,
	}
	err := Serve(context.Background(), &mcp.StdioTransport{}, opts)
	if linger {
		sleepForever()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpmock:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}
