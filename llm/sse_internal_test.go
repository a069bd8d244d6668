package llm

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// tapOf reads body through a fresh tap, the body handed out in reads of
// at most chunk bytes (0: whole) and the tap read in reads of at most out
// bytes, as go-openai's bufio does.
func tapOf(t *testing.T, body string, lim limits, chunk, out int) (*sseTap, string, error) {
	t.Helper()
	var r io.Reader = strings.NewReader(body)
	if chunk > 0 {
		r = &chunkReader{r: r, n: chunk}
	}
	tap := newTap(io.NopCloser(r), lim)
	var got bytes.Buffer
	p := make([]byte, out)
	for {
		n, err := tap.Read(p)
		got.Write(p[:n])
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return tap, got.String(), err
		}
	}
}

type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

var errorLine = regexp.MustCompile(`^data:\s*{"error":`)

// tapModel is the tap's filter and watch written plainly, a line at a
// time: data lines (after leading blanks) pass, every run of other ended
// lines becomes one newline; of the data lines, [DONE] is noted, error
// events kept, the rest with a payload counted; other lines that are not
// SSE are kept as junk.
func tapModel(body string) (out string, w sseWatch) {
	var b strings.Builder
	gap := false
	for l := range strings.SplitAfterSeq(body, "\n") {
		ended := strings.HasSuffix(l, "\n")
		l = strings.TrimLeft(l, " \t\r\v\f")
		line := strings.TrimSpace(l)
		if strings.HasPrefix(l, "data:") {
			b.WriteString(l)
			gap = false
			switch payload := strings.TrimSpace(line[5:]); {
			case payload == "":
			case payload == "[DONE]":
				w.sawDone = true
			case errorLine.MatchString(line):
				w.intercept = append(w.intercept, []byte(payload))
			default:
				w.events++
			}
			continue
		}
		if ended && !gap {
			b.WriteByte('\n')
			gap = true
		}
		sse := line == "" || line[0] == ':'
		for _, f := range []string{"event:", "id:", "retry:"} {
			sse = sse || strings.HasPrefix(line, f)
		}
		if !sse {
			w.junk = append(w.junk, line...)
		}
	}
	return b.String(), w
}

// The tap alone, over generated bodies of SSE lines, comments, event
// lines, blank lines, error events, [DONE], non-SSE text and lines cut
// anywhere: what it hands on and what it watches are the plain model's,
// however the body and the reads are cut.
func TestTap_FilterAndWatchModel(t *testing.T) {
	shapes := []string{
		"data: {\"choices\":[]}\n", "data:{}\n", "  data: x\n", "\tdata: [DONE]\n", "data: [DONE]\n",
		"data: {\"error\":{\"code\":429}}\n", "data:   {\"error\": 1}\n", "data:\n", "data: \r\n",
		": keep-alive\n", "event: ping\n", "id: 7\n", "retry: 100\n", "\n", "\r\n", "  \n",
		"dat\n", "DATA: x\n", "<html>oops</html>\n", "{\"error\":{\"message\":\"m\"}}\n", "data", "da", ": x",
		"data: {\"choices\":[{\"delta\":{\"content\":\"é\"}}]}\n",
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		var b strings.Builder
		for range rnd.IntN(12) {
			b.WriteString(shapes[rnd.IntN(len(shapes))])
		}
		body := b.String()
		wantOut, want := tapModel(body)
		chunk, out := rnd.IntN(8), 1+rnd.IntN(64)
		tap, got, err := tapOf(t, body, limits{}, chunk, out)
		if err != nil {
			t.Fatalf("case %d %q: %v", i, body, err)
		}
		w := tap.watch
		if got != wantOut || w.sawDone != want.sawDone || w.events != want.events ||
			string(w.junk) != string(want.junk) || !slices.EqualFunc(w.intercept, want.intercept, bytes.Equal) {
			t.Fatalf("case %d (reads of %d, %d) %q:\n got %q %+v\nwant %q %+v", i, chunk, out, body, got, w, wantOut, want)
		}
	}
}

// The tap's caps: bytes without progress, and one data line.
func TestTap_Bounds(t *testing.T) {
	lim := limits{idle: 100, reply: 1 << 20, event: 50}
	_, _, err := tapOf(t, strings.Repeat(": keep-alive\n", 10), lim, 3, 16)
	if le, ok := errors.AsType[*LimitError](err); !ok || le.Kind != LimitIdle {
		t.Errorf("a flood of comments: %v, want the idle limit", err)
	}
	_, _, err = tapOf(t, strings.Repeat("data:\n", 20), lim, 0, 16)
	if le, ok := errors.AsType[*LimitError](err); !ok || le.Kind != LimitIdle {
		t.Errorf("a flood of empty data lines: %v, want the idle limit", err)
	}
	_, _, err = tapOf(t, "data: "+strings.Repeat("x", 60)+"\n", lim, 7, 16)
	if le, ok := errors.AsType[*LimitError](err); !ok || le.Kind != LimitEvent {
		t.Errorf("a long data line: %v, want the event limit", err)
	}
	tap, _, err := tapOf(t, strings.Repeat(": keep-alive\n", 7)+"data: {}\n", lim, 0, 16)
	if err != nil || tap.budget.idle != int64(7*len(": keep-alive\n")) {
		t.Errorf("under the cap: %v, idle %d", err, tap.budget.idle)
	}
	tap.budget.progress()
	if tap.budget.idle != 0 {
		t.Errorf("progress left %d bytes without progress", tap.budget.idle)
	}
}

// ahead counts the events of input already read, without reading more,
// and what it filtered is handed on first.
func TestTap_AheadCountsWhatWasRead(t *testing.T) {
	body := "data: {\"a\":1}\n\n: ping\ndata: {\"b\":2}\n\n"
	tap := newTap(io.NopCloser(&chunkReader{r: strings.NewReader(body + "data: {\"c\":3}\n\n"), n: 20}), limits{})
	p := make([]byte, 4)
	if _, err := tap.Read(p); err != nil {
		t.Fatal(err)
	}
	tap.ahead()
	if tap.watch.events != 1 {
		t.Fatalf("after ahead, %d events counted, want 1 (the second is not all read)", tap.watch.events)
	}
	rest, err := io.ReadAll(tap)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tapModel(body + "data: {\"c\":3}\n\n")
	if got := string(p) + string(rest); got != want {
		t.Fatalf("handed on %q, want %q", got, want)
	}
	if tap.watch.events != 3 {
		t.Fatalf("%d events, want 3", tap.watch.events)
	}
}
