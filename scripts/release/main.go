// Command release builds Rebound's release archives and checks its ACP
// agent registry entry the way the registry's CI does, without fetching
// anything. Run it from the repository:
//
//	go run ./scripts/release build [-out DIR] [-targets all|host|PLATFORM,...] [-tag vX.Y.Z]
//	go run ./scripts/release check [-out DIR]
//
// build writes the archives, SHA256SUMS and the entry (rebound/agent.json,
// without sums, which the registry's updater would leave stale;
// rebound/icon.svg) into DIR, outside the checkout. check checks that
// entry, simulates the registry updater's bump of it to the next patch,
// minor and major release, checks every archive in DIR against
// SHA256SUMS, and runs the registry's auth and launch checks on this
// machine's binary; without -out it first builds this machine's archive
// into a temporary directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/rebound-agent/rebound/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage:
  go run ./scripts/release build [-out DIR] [-targets all|host|PLATFORM,...] [-tag vX.Y.Z]
  go run ./scripts/release check [-out DIR]
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(stderr, "release:", err)
		return 1
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	c := &command{ctx: ctx, root: root, stdout: stdout, stderr: stderr}
	fs.StringVar(&c.out, "out", "", "the output directory, outside the checkout (build: default a new temporary directory)")
	var targets, tag *string
	switch args[0] {
	case "build":
		targets = fs.String("targets", "all", "the platforms to build: all, host, or registry platform keys separated by commas")
		tag = fs.String("tag", "", "the release's tag (vX.Y.Z): each binary must report it as its version")
	case "check":
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if code, ok := parseArgs(fs, args[1:], stderr); !ok {
		return code
	}
	if args[0] == "build" {
		return c.build(*targets, *tag)
	}
	return c.check()
}

// parseArgs parses a subcommand's flags; it allows no other arguments.
// When not ok, the command ends with code: 0 for -h, else 2.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// command is a subcommand run in the module at root, its output in out.
type command struct {
	ctx            context.Context
	root, out      string
	stdout, stderr io.Writer
}

// buildInto builds ts into out, or a new temporary directory, and returns it.
func (c *command) buildInto(ts []release.Target, tag string) (string, error) {
	dir := c.out
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "rebound-release-"); err != nil {
			return "", err
		}
	}
	_, err := release.Build(c.ctx, release.BuildOptions{Root: c.root, Out: dir, Targets: ts, Tag: tag, Log: c.stderr})
	return dir, err
}

// build is `release build`: it prints the directory it built into.
func (c *command) build(targets, tag string) int {
	ts, err := release.ParseTargets(targets)
	if err != nil {
		fmt.Fprintln(c.stderr, "release build:", err)
		return 2
	}
	dir, err := c.buildInto(ts, tag)
	if err != nil {
		fmt.Fprintln(c.stderr, "release build:", err)
		return 1
	}
	fmt.Fprintln(c.stdout, dir)
	return 0
}

// check is `release check`: the entry and archives in out, or, without
// -out, in a build of this machine's archive, removed after.
func (c *command) check() int {
	dir := c.out
	if dir == "" {
		var err error
		if dir, err = c.buildHost(); err != nil {
			fmt.Fprintln(c.stderr, "release check:", err)
			return 1
		}
		defer os.RemoveAll(dir)
	}
	errs := c.checkEntry(dir)
	for _, err := range errs {
		fmt.Fprintln(c.stderr, "release check:", err)
	}
	if len(errs) > 0 {
		return 1
	}
	fmt.Fprintln(c.stdout, "The registry entry passes the registry's checks (except fetching the URLs), and still does after the registry's automatic version bumps.")
	return 0
}

// buildHost builds this machine's archive into a new temporary directory.
func (c *command) buildHost() (string, error) {
	host, ok := release.HostTarget()
	if !ok {
		return "", errors.New("this machine's platform is not one the registry lists; build elsewhere and pass -out")
	}
	return c.buildInto([]release.Target{host}, "")
}

// checkEntry runs release.Check on dir, against the registry's schema and
// the checkout's agent.json's id.
func (c *command) checkEntry(dir string) []error {
	schema, err := release.LoadSchema(filepath.Join(c.root, "testdata", "registry", "agent.schema.json"))
	if err != nil {
		return []error{err}
	}
	m, err := readManifest(c.root)
	if err != nil {
		return []error{err}
	}
	return release.Check(c.ctx, release.CheckOptions{Out: dir, ID: m.ID, Schema: schema, Log: c.stderr})
}

func readManifest(root string) (release.Manifest, error) {
	data, err := os.ReadFile(filepath.Join(root, "agent.json"))
	if err != nil {
		return release.Manifest{}, err
	}
	return release.ParseManifest(data)
}

// moduleRoot is the directory with go.mod at or above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the module: run from the repository")
		}
		dir = parent
	}
}
