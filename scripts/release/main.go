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
	out := fs.String("out", "", "the output directory, outside the checkout (build: default a new temporary directory)")
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
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "release %s: unexpected argument %q\n", args[0], fs.Arg(0))
		return 2
	}

	build := func(ts []release.Target, tag string) (string, error) {
		dir := *out
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "rebound-release-"); err != nil {
				return "", err
			}
		}
		_, err := release.Build(ctx, release.BuildOptions{Root: root, Out: dir, Targets: ts, Tag: tag, Log: stderr})
		return dir, err
	}
	switch args[0] {
	case "build":
		ts, err := release.ParseTargets(*targets)
		if err != nil {
			fmt.Fprintln(stderr, "release build:", err)
			return 2
		}
		dir, err := build(ts, *tag)
		if err != nil {
			fmt.Fprintln(stderr, "release build:", err)
			return 1
		}
		fmt.Fprintln(stdout, dir)
		return 0
	}

	dir := *out
	if dir == "" {
		host, ok := release.HostTarget()
		if !ok {
			fmt.Fprintln(stderr, "release check: this machine's platform is not one the registry lists; build elsewhere and pass -out")
			return 1
		}
		var err error
		if dir, err = build([]release.Target{host}, ""); err != nil {
			fmt.Fprintln(stderr, "release check:", err)
			return 1
		}
		defer os.RemoveAll(dir)
	}
	schema, err := release.LoadSchema(filepath.Join(root, "testdata", "registry", "agent.schema.json"))
	if err != nil {
		fmt.Fprintln(stderr, "release check:", err)
		return 1
	}
	m, err := readManifest(root)
	if err != nil {
		fmt.Fprintln(stderr, "release check:", err)
		return 1
	}
	errs := release.Check(ctx, release.CheckOptions{Out: dir, ID: m.ID, Schema: schema, Log: stderr})
	for _, err := range errs {
		fmt.Fprintln(stderr, "release check:", err)
	}
	if len(errs) > 0 {
		return 1
	}
	fmt.Fprintln(stdout, "The registry entry passes the registry's checks (except fetching the URLs), and still does after the registry's automatic version bumps.")
	return 0
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
