package docs

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// The README and docs quote what a person reads about a retry. The quotes
// are rendered here from the code that words them (recovery/words.go), so
// a reworded status cannot leave a stale quote behind; and no page counts
// retries the other way ("attempt 2 of 3").

// markdownPages are the pages that quote retry wording.
var markdownPages = []string{readme, "../../docs/providers.md"}

// prose is a page's text with Markdown's soft line breaks undone, so a
// quote may wrap.
func prose(t *testing.T, path string) string {
	t.Helper()
	return strings.Join(strings.Fields(string(readFile(t, path))), " ")
}

func TestREADME_QuotesRetryWordsFromTheCode(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	cet := time.FixedZone("CET", 3600)
	time.Local = cet
	ms := func(v int64) *int64 { return &v }
	limited := &recovery.Failure{Code: recovery.RateLimit, Status: 429}
	after8 := &recovery.Failure{Code: recovery.RateLimit, Status: 429, RetryAfterMs: ms(8000)}
	w5 := recovery.Wording{Retry: recovery.Retry{N: 1, Max: 2, PolicyN: 1, Delay: 5 * time.Second, Failure: limited}}
	w8 := recovery.Wording{Retry: recovery.Retry{N: 1, Max: 2, PolicyN: 1, Delay: 8 * time.Second, Failure: after8}}
	long := recovery.Wording{Retry: recovery.Retry{N: 1, Max: 2, PolicyN: 1, Delay: 40 * time.Minute, Failure: limited},
		At: time.Date(2026, 12, 6, 13, 22, 10, 0, cet)}
	scheduled, _ := w8.Scheduled()
	started, _ := w8.Started()
	recovered, _ := w8.Recovered()
	cancelled, cancelledBody := w8.Cancelled(false)
	longTitle, _ := long.Scheduled()
	gaveUp := (&recovery.GiveUpError{Failure: &recovery.Failure{Code: recovery.Server, Status: 503,
		Message: "The server is overloaded or not ready yet."}, Attempts: 3, Retries: 2,
		Elapsed: 1500 * time.Millisecond, Why: "retries exhausted"}).Message()
	gaveUp429 := (&recovery.GiveUpError{Failure: limited, Attempts: 3, Retries: 2,
		Elapsed: 2100 * time.Millisecond, Why: "retries exhausted"}).Message()

	page := prose(t, readme)
	for what, quote := range map[string]string{
		"the notice":                   "*" + w5.Subject() + "* — *" + w5.Description() + "*",
		"a status's title":             "*" + scheduled + "*",
		"its content":                  "*" + w8.Description() + "*",
		"the title once the wait ends": "*" + strings.TrimPrefix(started, w8.Subject()+", ") + "*",
		"the recovered title":          "*" + recovered + "*",
		"the cancelled title and body": "*" + cancelled + "* with the content *" + strings.SplitN(cancelledBody, "\n", 2)[0] + "*",
		"a long wait's title":          "*" + longTitle + "*",
		"the give-up":                  gaveUp + "*",
		"the give-up in the table":     `"` + gaveUp429 + `"`,
	} {
		if !strings.Contains(page, quote) {
			t.Errorf("README.md does not quote %s as the code words it: %q", what, quote)
		}
	}
	if want := "30 s"; recovery.ClockAfter != 30*time.Second || !strings.Contains(page, "A wait of "+want+" or more says when it ends") {
		t.Errorf("README.md's threshold for a clock time is not recovery.ClockAfter (%v)", recovery.ClockAfter)
	}
	if want := "↻ connection dropped · retrying in 1.0s · " + recovery.RetryOf(1, 2); !strings.Contains(page, want) {
		t.Errorf("README.md's demo line is not the demo's wording: want %q", want)
	}
}

// countPhrases are counts of a retry or an attempt in a page's prose.
var countPhrases = regexp.MustCompile(`(?i)\b(attempt|retry) \d+ of \d+`)

// TestDocs_CountRetriesOneWay: every "N of M" a page quotes counts retries,
// as the code does.
func TestDocs_CountRetriesOneWay(t *testing.T) {
	for _, path := range markdownPages {
		for _, m := range countPhrases.FindAllString(prose(t, path), -1) {
			if !strings.EqualFold(m[:5], "retry") {
				t.Errorf("%s counts attempts (%q): the code counts retries (recovery.RetryOf)", path, m)
			}
		}
	}
	if got := countPhrases.FindAllString("attempt 2 of 3, retry 1 of 2", -1); len(got) != 2 {
		t.Errorf("countPhrases finds %q, want both counts", got)
	}
}
