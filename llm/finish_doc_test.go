package llm_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/golden"
	"github.com/rebound-agent/rebound/llm"
)

// docs/providers.md lists the finish-reason table as the code has it.
func TestFinishReasons_Documented(t *testing.T) {
	const begin, end = "<!-- finish:begin (go test ./llm -run Documented -update) -->\n", "<!-- finish:end -->"
	var b strings.Builder
	for _, c := range []llm.FinishClass{llm.FinishEnd, llm.FinishToolUse, llm.FinishTruncated, llm.FinishRefused, llm.FinishFailed} {
		rs := llm.FinishReasons(c)
		slices.Sort(rs)
		b.WriteString("- **" + c.String() + "**: `" + strings.Join(rs, "`, `") + "`\n")
	}
	golden.CompareSection(t, filepath.Join("..", "docs", "providers.md"), begin, end, b.String(), *golden.Update, "go test ./llm -run Documented -update")
}
