package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/testkit"
)

// A log that is no file reads as the same log: from standard input ("-")
// and from a named pipe, as "rebound inspect <(zcat log.jsonl.gz)" gives.
func TestInspect_ReadsAPipe(t *testing.T) {
	dir := t.TempDir()
	path := writeInspectLog(t, dir, "retry.jsonl", snapshotEvents(t, "retry_exhausted"))
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := runInspectCmd(t, inspectEnv(t, nil), "inspect", path)
	if want == "" {
		t.Fatal("the file itself shows nothing")
	}
	// The log line names where it was read from; the rest is the same.
	same := func(t *testing.T, got, name string) {
		t.Helper()
		if strings.Replace(got, "log     "+name, "log     "+path, 1) != want {
			t.Errorf("read from %s:\n%s\nwant as from the file:\n%s", name, got, want)
		}
	}

	var out, errOut bytes.Buffer
	if code := runEnv(context.Background(), []string{"inspect", "-"}, bytes.NewReader(log), &out, &errOut, inspectEnv(t, nil)); code != 0 {
		t.Fatalf("inspect -: exit %d, stderr %s", code, errOut.String())
	}
	same(t, out.String(), "standard input")

	fifo := filepath.Join(dir, "log.fifo")
	testkit.Mkfifo(t, fifo)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(log)
		f.Close()
	}()
	code, got, stderr := runInspectCmd(t, inspectEnv(t, nil), "inspect", fifo)
	if code != 0 {
		t.Fatalf("inspect FIFO: exit %d, stderr %s", code, stderr)
	}
	same(t, got, fifo)
}

// A pipe that never ends is refused at the cap with words that say what to
// do, never read into memory without end.
func TestCappedReader_FailsPastTheCap(t *testing.T) {
	r := &cappedReader{r: strings.NewReader(strings.Repeat("x", 100)), left: 64}
	b, err := io.ReadAll(r)
	if len(b) != 64 || err == nil || !strings.Contains(err.Error(), "save it to a file first") {
		t.Fatalf("read %d bytes, err %v; want 64 and the cap's error", len(b), err)
	}
	r = &cappedReader{r: strings.NewReader("short"), left: 64}
	if b, err := io.ReadAll(r); string(b) != "short" || err != nil {
		t.Fatalf("under the cap: %q, %v", b, err)
	}
}
