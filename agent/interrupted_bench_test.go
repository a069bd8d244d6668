package agent

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/session"
)

// What the search costs a first prompt, with the index up to date: n
// sessions in the state directory, half of them in the prompt's directory,
// each a finished turn of a few lines, the newest here cut by a crash.
func BenchmarkLastInterrupted(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
				b.Fatal(err)
			}
			t := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
			for i := range n {
				id := fmt.Sprintf("sess_%032d", i)
				cwd := "/p"
				if i%2 == 1 {
					cwd = "/q"
				}
				at := t.Add(time.Duration(i) * time.Minute).Format(time.RFC3339Nano)
				log := fmt.Sprintf(`{"seq":1,"v":1,"time":%q,"type":"session/start","data":{"sessionId":%q,"cwd":%q}}
{"seq":2,"v":1,"time":%q,"type":"turn/start","data":{"turn":1,"prompt":[],"text":"Question %d"}}
{"seq":3,"v":1,"time":%q,"type":"step/start","data":{"turn":1,"step":1}}
{"seq":4,"v":1,"time":%q,"type":"assistant/message","data":{"turn":1,"step":1,"text":"An answer of some length, as replies go.","finishReason":"stop","messageId":"msg_1"}}
{"seq":5,"v":1,"time":%q,"type":"step/end","data":{"turn":1,"step":1,"outcome":"ok"}}
`, at, id, cwd, at, i, at, at, at)
				if i != n-2 { // the newest here is cut
					log += fmt.Sprintf(`{"seq":6,"v":1,"time":%q,"type":"turn/end","data":{"turn":1,"stopReason":"end_turn","title":"Question %d"}}`+"\n", at, i)
				}
				path := session.Path(dir, id)
				if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
					b.Fatal(err)
				}
				mt := t.Add(time.Duration(i)*time.Minute + time.Second)
				if err := os.Chtimes(path, mt, mt); err != nil {
					b.Fatal(err)
				}
			}
			x := session.NewIndex(dir, nil)
			if _, err := x.List(); err != nil { // builds the index file
				b.Fatal(err)
			}
			logs := stateLogs(dir)
			b.ResetTimer()
			for b.Loop() {
				sums, _, err := x.Page(nil, math.MaxInt, func(s session.Summary) bool { return s.SessionID != "self" && filepath.Clean(s.Cwd) == "/p" })
				if err != nil {
					b.Fatal(err)
				}
				if _, _, ok, errs := lastInterrupted(sums, "self", "/p", logs); !ok || errs != nil {
					b.Fatalf("no notice: %v", errs)
				}
			}
		})
	}
}
