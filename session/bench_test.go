package session_test

import (
	"io"
	"testing"

	"github.com/rebound-agent/rebound/session"
)

// BenchmarkLog_AppendChunk appends one assistant/chunk record (a few tokens
// of streamed text) per op to a log on disk:
//   - buffered: Append as the agent calls it for every chunk;
//   - write-each: Append then Flush, one write(2) per record: what Append
//     cost before it buffered, the baseline;
//   - sync-each: AppendSync, one write(2) and one fsync per record.
//
// writes/op counts the Log's Writes to its file.
func BenchmarkLog_AppendChunk(b *testing.B) {
	chunk := session.AssistantChunk{Turn: 1, Step: 1, Text: "Hello, wor"}
	for _, bb := range []struct {
		name  string
		after func(*session.Log) error
		sync  bool
	}{
		{"buffered", nil, false},
		{"write-each", (*session.Log).Flush, false},
		{"sync-each", nil, true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			l, err := session.Create(b.TempDir(), "s1", start1)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			w := &writes{}
			session.WrapWriter(l, func(f io.Writer) io.Writer { w.w = f; return w })
			for i := 0; i < 4; i += 2 { // turn/start, step/start
				if _, err := l.Append(turn1[i].(string), turn1[i+1]); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Flush(); err != nil {
				b.Fatal(err)
			}
			before := w.count()
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if bb.sync {
					_, err = l.AppendSync(session.TypeAssistantChunk, chunk)
				} else {
					_, err = l.Append(session.TypeAssistantChunk, chunk)
				}
				if err == nil && bb.after != nil {
					err = bb.after(l)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.count()-before)/float64(b.N), "writes/op")
		})
	}
}
