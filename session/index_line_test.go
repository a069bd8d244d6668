package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// decodeIndexLine reads what json.Unmarshal reads, whichever path it takes.
func TestDecodeIndexLine_SameAsUnmarshal(t *testing.T) {
	at := time.Date(2026, 11, 1, 9, 0, 0, 123456789, time.UTC)
	var lines [][]byte
	for _, rec := range []indexRecord{
		{Summary: Summary{SessionID: "sess_1", Cwd: "/w", Title: "Fix the build", UpdatedAt: at}},
		{Summary: Summary{SessionID: "sess_1", Cwd: "/w", UpdatedAt: at}},
		{Summary: Summary{SessionID: "sess_1", Cwd: "/w", Title: `Quote "this" \ and <that> & é ✓`, UpdatedAt: at}},
		{Summary: Summary{SessionID: "sess_1", Cwd: "C:\\work\tdir", Title: "line\nbreak", UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 3600))}},
		{Summary: Summary{SessionID: "s"}, Deleted: true},
	} {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	lines = append(lines,
		[]byte(`{"cwd":"/w","sessionId":"sess_1","updatedAt":"2026-11-01T09:00:00Z"}`), // another order
		[]byte(`{"sessionId":"sess_1","cwd":"/w","updatedAt":"yesterday"}`),
		[]byte(`{"sessionId":"sess_1","cwd":"/w","updatedAt":"2026-11-01T09:00:00Z"} `),
		[]byte(`{"sessionId":"sess_1","cwd":"/w","updatedAt":"2026-11-01T09:00:00Z"}x`),
		[]byte(`{"sessionId":"sess_1","cwd":"/w`),
		[]byte("{\"sessionId\":\"s\xff\",\"cwd\":\"/w\",\"updatedAt\":\"2026-11-01T09:00:00Z\"}"),
	)
	for _, line := range lines {
		var want indexRecord
		wantErr := json.Unmarshal(line, &want)
		got, err := decodeIndexLine(line)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("decodeIndexLine(%s): error %v, json.Unmarshal: %v", line, err, wantErr)
			continue
		}
		if err == nil {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decodeIndexLine(%s) (-json +got):\n%s", line, diff)
			}
		}
	}
	if _, ok := fastIndexLine(lines[0]); !ok {
		t.Errorf("a line as Put writes it took the slow path: %s", lines[0])
	}
}
