package demo

import (
	"math/rand/v2"
	"os/exec"
	"testing"
)

// TestShellWord_RoundTrips: a shell reads shellWord(s) back as s, for
// paths with spaces, quotes and the shell's special characters.
func TestShellWord_RoundTrips(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	r := rand.New(rand.NewPCG(32, 10))
	cases := []string{"/usr/bin/rebound", "./rebound", "/tmp/my dir/rebound", "it's", `a"b`, "$HOME", "a;b", "*"}
	for range 30 {
		alphabet := []rune("ab /'\"$`\\;*?!&|<>(){}~#é")
		b := make([]rune, 1+r.IntN(10))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		out, err := exec.Command(sh, "-c", "printf %s "+shellWord(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("shellWord(%q) = %s: the shell read %q (%v)", s, shellWord(s), out, err)
		}
	}
	if got := shellWord("/usr/local/bin/rebound"); got != "/usr/local/bin/rebound" {
		t.Errorf("a plain path is quoted: %s", got)
	}
}
