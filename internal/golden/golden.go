// Package golden holds what the golden-file tests share: comparing output
// with a checked-in file (rewritten with -update) and reading the session
// log that a golden transcript recorded. Only tests import it.
package golden

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/session"
)

// Update is the -update flag of every test binary in the module: each
// package's tests import this package, so `go test ./... -update` is
// understood everywhere and rewrites every golden file there is.
var Update = flag.Bool("update", false, "rewrite golden files (snapshots, schemas, testdata) from the current behaviour")

// Compare checks got against the file at path, or rewrites the file when
// update is set (with Write: see there why). rerun is the command that
// rewrites it, for the message.
func Compare(t testing.TB, path string, got []byte, update bool, rerun string) {
	t.Helper()
	if update {
		if err := Write(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `%s` to create it)", err, rerun)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s\nrun `%s` and read the diff if the change is intended", path, diff, rerun)
	}
}

// SnapshotLog returns the session log events a golden transcript recorded
// (its "dir":"log" lines); of a scenario with several sessions, the first
// session's.
func SnapshotLog(t testing.TB, path string) []session.Event {
	t.Helper()
	logs := SnapshotLogs(t, path)
	if len(logs) == 0 {
		return nil
	}
	return logs[0]
}

// SnapshotLogs returns each session log a golden transcript recorded, in
// the order they were recorded: a log begins at an event with seq 1.
func SnapshotLogs(t testing.TB, path string) [][]session.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var logs [][]session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Dir   string         `json:"dir"`
			Event *session.Event `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if line.Dir != "log" || line.Event == nil {
			continue
		}
		if line.Event.Seq == 1 || len(logs) == 0 {
			logs = append(logs, nil)
		}
		logs[len(logs)-1] = append(logs[len(logs)-1], *line.Event)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return logs
}
