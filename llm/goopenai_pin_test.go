package llm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// verifiedGoOpenAI is the go-openai version whose stream reader the SSE tap
// (transport.go) was checked against: the tap filters what reaches the
// library and reads ahead of its bufio reader, so it depends on how the
// library parses a stream.
const verifiedGoOpenAI = "v1.43.0"

// TestGoOpenAI_StreamReaderIsTheOneTheTapWasCheckedAgainst fails on a
// go-openai upgrade until someone re-reads its stream_reader.go against the
// tap's assumptions and moves the pin: an upgrade must not change the tap's
// ground silently.
func TestGoOpenAI_StreamReaderIsTheOneTheTapWasCheckedAgainst(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "github.com/sashabaranov/go-openai").Output()
	if err != nil {
		t.Skipf("go list: %v (no go command or module cache)", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if version != verifiedGoOpenAI {
		t.Fatalf("go.mod has go-openai %s, but the SSE tap in transport.go was checked against %s: re-read %s/stream_reader.go (the error prefix it swallows, data-line handling, the empty-message limit), adapt the tap, then update verifiedGoOpenAI",
			version, verifiedGoOpenAI, dir)
	}
	src, err := os.ReadFile(filepath.Join(dir, "stream_reader.go"))
	if err != nil {
		t.Skipf("go-openai source not in the module cache: %v", err)
	}
	for _, assumption := range []string{
		"errorPrefix = regexp.MustCompile(`^data:\\s*{\"error\":`)", // = goOpenAIErrorPrefix
		"headerData  = regexp.MustCompile(`^data:\\s*`)",            // only data lines carry events
	} {
		if !strings.Contains(string(src), assumption) {
			t.Errorf("go-openai %s's stream_reader.go no longer has %s: the tap's assumptions need checking", version, assumption)
		}
	}
}
