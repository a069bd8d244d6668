package proc

import (
	"os"
	"testing"
)

// BenchmarkStart measures what a command pays for its reaper: starting
// /bin/true and waiting for it, directly and under a reaper.
func BenchmarkStart(b *testing.B) {
	env := os.Environ()
	for _, mode := range []struct {
		name  string
		start func(Cmd, string, []string) (*Process, error)
	}{{"direct", startDirect}, {"reaped", startReaped}} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				p, err := mode.start(Cmd{Name: "/bin/true"}, "/bin/true", env)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
