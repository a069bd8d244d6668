// Package release builds Rebound's release archives and checks its entry
// for the ACP agent registry (agent.json and icon.svg) as the registry's CI
// does, except that nothing is fetched: the archives checked are the ones
// built here. scripts/release is its command line; .ci/run and the release
// workflow run it.
package release

import (
	"fmt"
	"runtime"
	"strings"
)

// Target is one platform the registry lists a build for.
type Target struct {
	Platform string // the registry's key, e.g. linux-x86_64
	GOOS     string
	GOARCH   string
}

// Targets are the six platforms the registry knows, in its order.
var Targets = []Target{
	{"darwin-aarch64", "darwin", "arm64"},
	{"darwin-x86_64", "darwin", "amd64"},
	{"linux-aarch64", "linux", "arm64"},
	{"linux-x86_64", "linux", "amd64"},
	{"windows-aarch64", "windows", "arm64"},
	{"windows-x86_64", "windows", "amd64"},
}

// HostTarget is the target of the machine this runs on, the one whose
// binary the registry's CI would run here; false when it has none.
func HostTarget() (Target, bool) {
	return TargetFor(runtime.GOOS, runtime.GOARCH)
}

// TargetFor is the target built with goos and goarch.
func TargetFor(goos, goarch string) (Target, bool) {
	for _, t := range Targets {
		if t.GOOS == goos && t.GOARCH == goarch {
			return t, true
		}
	}
	return Target{}, false
}

// LookupTarget finds a target by its platform key.
func LookupTarget(platform string) (Target, bool) {
	for _, t := range Targets {
		if t.Platform == platform {
			return t, true
		}
	}
	return Target{}, false
}

// OS is the registry's operating system family: the key before the dash.
func (t Target) OS() string {
	os, _, _ := strings.Cut(t.Platform, "-")
	return os
}

// Binary is the file name of Rebound's executable for t.
func (t Target) Binary() string {
	if t.GOOS == "windows" {
		return "rebound.exe"
	}
	return "rebound"
}

// Cmd is the manifest's cmd for t: the binary at the archive's top level.
func (t Target) Cmd() string { return "./" + t.Binary() }

// Archive is the release asset's name, e.g. rebound-linux-amd64.tar.gz;
// Windows gets a zip, which its own Explorer opens. It names no version:
// the release's tag in the URL does (ReleaseURL), which is the only place
// the registry's updater rewrites it.
func (t Target) Archive() string {
	ext := ".tar.gz"
	if t.GOOS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("rebound-%s-%s%s", t.GOOS, t.GOARCH, ext)
}
