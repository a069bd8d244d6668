//go:build unix

package session_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/session"
)

// newSessionWithTurn creates session id in stateDir with one whole turn,
// and lets go of it.
func newSessionWithTurn(t *testing.T, stateDir, id string) {
	t.Helper()
	l, err := session.Create(stateDir, id, session.SessionStart{SessionID: id, Cwd: "/w", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	recs := turn(1, "hello "+id)
	for i := 0; i < len(recs); i += 2 {
		if _, err := l.Append(recs[i].(string), recs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func listIDs(t *testing.T, stateDir string) ([]string, error) {
	t.Helper()
	var ids []string
	err := testkit.Returns(t, "List", func() error {
		list, err := session.NewIndex(stateDir, nil).List()
		for _, s := range list {
			ids = append(ids, s.SessionID)
		}
		return err
	}, stateDir)
	return ids, err
}

// #29 item 9: a FIFO named like a log in sessions/ blocked List in open(2),
// with the index's lock held, so nothing that lists, creates or prompts got
// an answer again, on every start. It is no session: List skips it at
// once, and lists the others, again and again.
func TestIndex_FIFONamedLikeALogIsSkipped(t *testing.T) {
	stateDir := t.TempDir()
	newSessionWithTurn(t, stateDir, "s1")
	testkit.Mkfifo(t, session.Path(stateDir, "sfifo"))
	for range 2 { // a second List, as the next start makes
		ids, err := listIDs(t, stateDir)
		if err != nil || strings.Join(ids, ",") != "s1" {
			t.Fatalf("List = %v, %v; want s1 alone", ids, err)
		}
	}
	// What a list's summary read does with it, asked directly.
	err := testkit.Returns(t, "ReadSummary", func() error { _, err := session.ReadSummary(session.Path(stateDir, "sfifo")); return err }, stateDir)
	if err == nil || !strings.Contains(err.Error(), "named pipe (FIFO), not a regular file") {
		t.Errorf("ReadSummary of a FIFO = %v, want it refused", err)
	}
}

// #29 item 10: the shown journal was opened through a link planted at its
// path, appended to and truncated after the commit: the link's target (a
// user's file, another session's log) was wiped. Whatever is at the path,
// the target is left as it was, and the journal works.
func TestShownJournal_LinkAtItsPathLeavesTheTargetAlone(t *testing.T) {
	for _, when := range []string{"before the first chunk", "after the first chunk", "left by a dead process"} {
		for _, kind := range []string{"symlink", "hard link", "symlink to another session's log"} {
			t.Run(when+"/"+kind, func(t *testing.T) {
				stateDir := t.TempDir()
				newSessionWithTurn(t, stateDir, "s2")
				target := filepath.Join(t.TempDir(), "notes.txt")
				if err := os.WriteFile(target, []byte("a user's notes\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if kind == "symlink to another session's log" {
					target = session.Path(stateDir, "s2")
				}
				before, err := os.ReadFile(target)
				if err != nil {
					t.Fatal(err)
				}
				plant := func(path string) {
					os.Remove(path)
					link := os.Symlink
					if kind == "hard link" {
						link = os.Link
					}
					if err := link(target, path); err != nil {
						t.Fatal(err)
					}
				}
				l, err := session.Create(stateDir, "s1", start1)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				shown := session.ShownPath(l.Path())
				mustAppend(t, l, session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: []byte(`[]`), Text: "hi"},
					session.TypeStepStart, session.StepStart{Turn: 1, Step: 1, MessageID: "m1"})
				switch when {
				case "before the first chunk":
					plant(shown)
				case "left by a dead process":
					plant(shown)
					// The next holder of the lock finds it and empties it
					// once it has closed the turn.
					if err := l.ClearShown(); err != nil {
						t.Fatalf("ClearShown: %v", err)
					}
				}
				if err := l.WriteShown(session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m1", Text: "Hel"}); err != nil {
					t.Fatalf("WriteShown: %v", err)
				}
				if when == "after the first chunk" {
					plant(shown) // the name now leads elsewhere; the Log's file is its own
				}
				if err := l.WriteShown(session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m1", Text: "lo"}); err != nil {
					t.Fatalf("WriteShown: %v", err)
				}
				if when != "after the first chunk" {
					chunks, _, err := session.ReadShown(l.Path())
					if err != nil || len(chunks) != 2 || chunks[0].Text+chunks[1].Text != "Hello" {
						t.Errorf("the journal holds %+v (%v), want Hel, lo", chunks, err)
					}
				}
				if err := l.ClearShown(); err != nil {
					t.Fatalf("ClearShown: %v", err)
				}
				if err := l.Unlock(); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				if after, err := os.ReadFile(target); err != nil || !bytes.Equal(after, before) {
					t.Errorf("the link's target holds %q (%v), want it as it was, %q", after, err, before)
				}
			})
		}
	}
}

// #29 item 11: a journal's chunks carried no session, and the open turn's
// message was not in the log: a journal copied from another session (or
// chunks of another message) was committed as this session's reply, mixed
// with its own. Only this session's chunks under the message the open
// step/start names count, wherever they are in the file.
func TestUnfinishedShown_OnlyThisSessionsOpenMessage(t *testing.T) {
	events := func(step string) []session.Event {
		ld, err := session.Parse(strings.NewReader(render(rStart, rTurn1, rec{session.TypeStepStart, step})), "fixture")
		if err != nil {
			t.Fatal(err)
		}
		return ld.Events
	}
	named := events(`{"turn":1,"step":1,"messageId":"m1"}`)
	unnamed := events(`{"turn":1,"step":1}`) // written by a Rebound from before
	chunk := func(sid, msg, text string) session.ShownChunk {
		return session.ShownChunk{SessionID: sid, AssistantChunk: session.AssistantChunk{Turn: 1, Step: 1, MessageID: msg, Text: text, Shown: true}}
	}
	own1, own2 := chunk("s1", "m1", "Hel"), chunk("s1", "m1", "lo")
	otherSession := chunk("s2", "m1", "THEIRS ") // the same turn and message id, another session
	otherSessionMsg := chunk("s2", "mX", "THEIRS ")
	otherMessage := chunk("s1", "m0", "OTHER ") // this session, a message the step does not name
	oldFormat := chunk("", "m1", "OLD ")
	tests := []struct {
		name    string
		events  []session.Event
		journal []session.ShownChunk
		want    string
		ok      bool
	}{
		{"own chunks only", named, []session.ShownChunk{own1, own2}, "Hello", true},
		{"a journal copied from another session", named, []session.ShownChunk{otherSession, otherSessionMsg}, "", false},
		{"another session's chunks around its own", named, []session.ShownChunk{otherSessionMsg, own1, otherSession, own2, otherSessionMsg}, "Hello", true},
		{"another message's chunks", named, []session.ShownChunk{otherMessage, own1, own2, otherMessage}, "Hello", true},
		{"old-format chunks under a step that names its message", named, []session.ShownChunk{oldFormat, own1, own2}, "Hello", true},
		{"an old journal under an old step", unnamed, []session.ShownChunk{oldFormat}, "OLD ", true},
		{"new-format chunks under an old step are not its writer's", unnamed, []session.ShownChunk{own1, oldFormat, otherSession}, "OLD ", true},
	}
	for _, tt := range tests {
		u, ok := session.UnfinishedShown(tt.events, "s1", tt.journal)
		if ok != tt.ok || u.Text != tt.want || ok && u.MessageID != "m1" {
			t.Errorf("%s: %q under %q, %v; want %q under m1, %v", tt.name, u.Text, u.MessageID, ok, tt.want, tt.ok)
		}
	}
}

// The class of #29 items 9 and 10, as a property: for every file Rebound
// keeps in a state directory (a session's log, its shown journal, the
// session index, the sessions directory) and every kind of entry that can
// be planted at its path (a FIFO, a directory, a link to a user's file, a
// link to another session's log, a dangling link, a second name of a
// user's file), every operation on it returns at once, with an error or
// without the entry, leaves every link's target as it was, and leaves the
// other sessions listed and usable.
func TestStateDir_PlantedEntriesCostNothingBeyondThemselves(t *testing.T) {
	type fixture struct {
		stateDir, userFile, otherLog string
	}
	plants := []struct {
		name string
		make func(t *testing.T, f fixture, path string)
	}{
		{"fifo", func(t *testing.T, _ fixture, path string) { testkit.Mkfifo(t, path) }},
		{"directory", func(t *testing.T, _ fixture, path string) {
			if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to a user's file", func(t *testing.T, f fixture, path string) { testkit.Symlink(t, f.userFile, path) }},
		{"symlink to another session's log", func(t *testing.T, f fixture, path string) {
			testkit.Symlink(t, f.otherLog, path)
		}},
		{"dangling symlink", func(t *testing.T, f fixture, path string) { testkit.Symlink(t, f.userFile+".missing", path) }},
		{"hard link to a user's file", func(t *testing.T, f fixture, path string) { testkit.Must(t, os.Link(f.userFile, path)) }},
		{"hard link to another session's log", func(t *testing.T, f fixture, path string) {
			testkit.Must(t, os.Link(f.otherLog, path))
		}},
	}
	// Each kind of file: its path, and the operations that touch it. An
	// operation returns an error or nil; either is fine, returning is what
	// counts (and what the checks after it find).
	type op struct {
		name string
		run  func(f fixture) error
	}
	listed := func(f fixture) error {
		list, err := session.NewIndex(f.stateDir, nil).List()
		if err != nil {
			return err
		}
		for _, s := range list {
			if s.SessionID == "s2" {
				return nil
			}
		}
		return errors.New("s2 is not listed")
	}
	kinds := []struct {
		name   string
		path   func(f fixture) string
		ops    []op
		listOK bool // List still works and lists s2
	}{
		{"session log", func(f fixture) string { return session.Path(f.stateDir, "s1") }, []op{
			{"List", listed},
			{"Open", func(f fixture) error { l, _, err := session.Open(f.stateDir, "s1"); closeLog(l); return err }},
			{"OpenShared", func(f fixture) error { l, _, err := session.OpenShared(f.stateDir, "s1"); closeLog(l); return err }},
			{"Open, append", func(f fixture) error {
				l, _, err := session.Open(f.stateDir, "s1")
				if err != nil {
					return err
				}
				defer l.Close()
				_, err = l.AppendSync(session.TypeMode, session.Mode{Mode: "ask"})
				return err
			}},
			{"Load", func(f fixture) error { _, err := session.Load(session.Path(f.stateDir, "s1")); return err }},
			{"LoadSession", func(f fixture) error { _, err := session.LoadSession(f.stateDir, "s1"); return err }},
			{"ReadSummary", func(f fixture) error { _, err := session.ReadSummary(session.Path(f.stateDir, "s1")); return err }},
			{"Remove", func(f fixture) error { return session.Remove(f.stateDir, "s1") }},
			{"Create", func(f fixture) error {
				l, err := session.Create(f.stateDir, "s1", session.SessionStart{SessionID: "s1", Cwd: "/w"})
				closeLog(l)
				return err
			}},
		}, true},
		{"shown journal", func(f fixture) string { return session.ShownPath(session.Path(f.stateDir, "s1")) }, []op{
			{"ReadShown", func(f fixture) error { _, _, err := session.ReadShown(session.Path(f.stateDir, "s1")); return err }},
			{"write, clear", func(f fixture) error {
				l, _, err := session.Open(f.stateDir, "s1")
				if err != nil {
					return err
				}
				defer l.Close()
				if _, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 2, Prompt: []byte(`[]`)}); err != nil {
					return err
				}
				if err := l.WriteShown(session.AssistantChunk{Turn: 2, Step: 1, MessageID: "m", Text: "x"}); err != nil {
					return err
				}
				if c, _, err := session.ReadShown(l.Path()); err != nil || len(c) != 1 {
					return fmt.Errorf("the journal written holds %d chunks (%v), want 1", len(c), err)
				}
				return l.ClearShown()
			}},
			{"clear left by a dead process", func(f fixture) error {
				l, _, err := session.Open(f.stateDir, "s1")
				if err != nil {
					return err
				}
				defer l.Close()
				return l.ClearShown()
			}},
			{"Remove", func(f fixture) error { return session.Remove(f.stateDir, "s1") }},
		}, true},
		{"session index", func(f fixture) string { return session.IndexPath(f.stateDir) }, []op{
			{"List", listed},
			{"Put", func(f fixture) error {
				return session.NewIndex(f.stateDir, nil).Put(session.Summary{SessionID: "s1", Cwd: "/w", UpdatedAt: time.Now()})
			}},
			{"Remove", func(f fixture) error { return session.NewIndex(f.stateDir, nil).Remove("s1") }},
		}, true},
		{"sessions directory", func(f fixture) string { return filepath.Join(f.stateDir, "sessions") }, []op{
			{"List", func(f fixture) error { _, err := session.NewIndex(f.stateDir, nil).List(); return err }},
			{"Create", func(f fixture) error {
				l, err := session.Create(f.stateDir, "s3", session.SessionStart{SessionID: "s3", Cwd: "/w"})
				closeLog(l)
				return err
			}},
		}, false},
	}
	const userContent = "a user's file\n"
	for _, k := range kinds {
		for _, p := range plants {
			for _, o := range k.ops {
				t.Run(k.name+"/"+p.name+"/"+o.name, func(t *testing.T) {
					f := fixture{stateDir: t.TempDir(), userFile: filepath.Join(t.TempDir(), "user.txt")}
					f.otherLog = session.Path(f.stateDir, "s2")
					testkit.Must(t, os.WriteFile(f.userFile, []byte(userContent), 0o600))
					if k.name == "sessions directory" {
						// Everything in it is elsewhere; what is planted is
						// the directory itself.
						testkit.Must(t, os.MkdirAll(f.stateDir, 0o700))
						other := t.TempDir()
						newSessionWithTurn(t, other, "s2")
						f.otherLog = session.Path(other, "s2")
					} else {
						newSessionWithTurn(t, f.stateDir, "s2")
						newSessionWithTurn(t, f.stateDir, "s1")
						if _, err := listIDs(t, f.stateDir); err != nil { // an index to plant over
							t.Fatal(err)
						}
					}
					path := k.path(f)
					testkit.Must(t, os.RemoveAll(path))
					p.make(t, f, path)
					s2Before, _ := os.ReadFile(f.otherLog)
					userBefore, _ := os.ReadFile(f.userFile)

					testkit.Returns(t, o.name, func() error { return o.run(f) }, f.stateDir)

					if b, _ := os.ReadFile(f.userFile); !bytes.Equal(b, userBefore) {
						t.Errorf("the user's file now holds %q, want %q", b, userBefore)
					}
					if _, err := os.Lstat(f.userFile + ".missing"); !errors.Is(err, fs.ErrNotExist) {
						t.Error("a dangling link's target was created")
					}
					if b, _ := os.ReadFile(f.otherLog); !bytes.Equal(b, s2Before) {
						t.Errorf("another session's log changed:\n%s\nwant\n%s", b, s2Before)
					}
					if k.name == "sessions directory" {
						return
					}
					if err := testkit.Returns(t, "List after", func() error { return listed(f) }, f.stateDir); k.listOK && err != nil {
						t.Errorf("List after: %v", err)
					}
					err := testkit.Returns(t, "Open s2 after", func() error {
						l, _, err := session.Open(f.stateDir, "s2")
						closeLog(l)
						return err
					}, f.stateDir)
					if err != nil {
						t.Errorf("another session can't be opened after: %v", err)
					}
				})
			}
		}
	}
}

func closeLog(l *session.Log) {
	if l != nil {
		l.Close()
	}
}
