package acp

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// Property: the directories a session works in (cwd and
// additionalDirectories, of session/new, load, resume and fork) are
// bounded and one line each once accepted: every one goes into the
// instructions of every model request, the session's log and index, and
// each session/list answer. Found by driving the binary: 300,000
// additional directories holding NUL and ESC were taken, and every model
// request of the session carried 7.7 MB of them (1.17 million input
// tokens).
func TestCheckCwd_Bounded(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	parts := []string{"/", "home", "é", "\x00", "\n", "\x1b[31m", "\u0085", "\x7f", " ", "\t", strings.Repeat("a", 1500), ".."}
	clean := false // a case of well-formed paths only, so a count alone decides
	path := func() string {
		var b strings.Builder
		if clean || r.IntN(6) != 0 {
			b.WriteByte('/')
		}
		for range r.IntN(8) {
			if clean {
				b.WriteString(parts[r.IntN(3)])
			} else {
				b.WriteString(parts[r.IntN(len(parts))])
			}
		}
		return b.String()
	}
	accepted := 0
	for range 3000 {
		clean = r.IntN(2) == 0
		cwd := path()
		extra := make([]string, []int{0, 1, 3, maxAdditionalDirectories, maxAdditionalDirectories + 1, 200}[r.IntN(6)])
		for i := range extra {
			extra[i] = path()
		}
		err := checkCwd(cwd, extra)
		if err != nil {
			if re, ok := err.(*RequestError); !ok || re.Code != CodeInvalidParams {
				t.Fatalf("checkCwd: %v, want invalid params", err)
			}
			continue
		}
		accepted++
		if len(extra) > maxAdditionalDirectories {
			t.Fatalf("%d additional directories accepted", len(extra))
		}
		for _, d := range append([]string{cwd}, extra...) {
			if len(d) > maxDirectoryBytes || strings.ContainsFunc(d, unicode.IsControl) {
				t.Fatalf("directory %q accepted: longer than %d bytes or not one line", d, maxDirectoryBytes)
			}
		}
	}
	if accepted == 0 {
		t.Fatal("nothing accepted: the property checked nothing")
	}
}
