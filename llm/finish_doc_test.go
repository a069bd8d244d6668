package llm_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/golden"
	"github.com/rebound-agent/rebound/llm"
)

// docs/providers.md lists the finish-reason table as the code has it.
func TestFinishReasons_Documented(t *testing.T) {
	path := filepath.Join("..", "docs", "providers.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- finish:begin (go test ./llm -run Documented -update) -->\n", "<!-- finish:end -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, begin, end)
	}
	var b strings.Builder
	for _, c := range []llm.FinishClass{llm.FinishEnd, llm.FinishToolUse, llm.FinishTruncated, llm.FinishRefused, llm.FinishFailed} {
		rs := llm.FinishReasons(c)
		slices.Sort(rs)
		b.WriteString("- **" + c.String() + "**: `" + strings.Join(rs, "`, `") + "`\n")
	}
	got := s[:i+len(begin)] + b.String() + s[j:]
	golden.Compare(t, path, []byte(got), *golden.Update, "go test ./llm -run Documented -update")
}
