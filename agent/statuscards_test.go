package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// fakeCards are status cards whose recorder and sender write to a list, so
// a test reads what was recorded and sent, in order.
type fakeCards struct {
	statusCards
	log []string // "record <state> <title>" and "send <state> <title> | <content>"
}

func newFakeCards(shown bool, recordErr error) *fakeCards {
	f := &fakeCards{}
	f.statusCards = statusCards{turn: 3, chains: map[string]*waitStatus{}, record: func(st session.Status) error {
		f.log = append(f.log, "record "+st.State+" "+st.Title)
		return recordErr
	}}
	if shown {
		f.send = func(_ context.Context, u acp.SessionUpdate) {
			content := ""
			if len(u.ToolContent) > 0 {
				content = strings.SplitN(u.ToolContent[0].Content.Text, "\n", 2)[0]
			}
			f.log = append(f.log, "send "+u.Status+" "+u.Title+" | "+content)
		}
	}
	return f
}

func retryWords(id string, n int, delay time.Duration) recovery.Wording {
	return recovery.Wording{Retry: recovery.Retry{ID: id, N: n, Max: 2, PolicyN: n, Delay: delay,
		Failure: &recovery.Failure{Code: recovery.Server, Status: 503}}}
}

// TestStatusCards: each state of a card is recorded before it is sent,
// with a content that says the same as its title; a recorder that fails
// still shows the card; a client that is not shown cards gets nothing
// sent, and the records are made all the same.
func TestStatusCards(t *testing.T) {
	ctx := t.Context()
	for _, tt := range []struct {
		name  string
		shown bool
		run   func(c *statusCards)
		want  []string
	}{
		{"recovered", true, func(c *statusCards) {
			w := retryWords("r1", 1, time.Second)
			c.scheduled(ctx, w)
			c.started(ctx, w.Retry)
			c.recovered(ctx)
		}, []string{
			"record in_progress The provider had a server error (503), retry 1 of 2 in 1.0s",
			"send in_progress The provider had a server error (503), retry 1 of 2 in 1.0s | Retrying in 1.0s (retry 1 of 2).",
			"record in_progress The provider had a server error (503), retrying now",
			"send in_progress The provider had a server error (503), retrying now | Retrying now (retry 1 of 2).",
			"record completed The provider had a server error (503), recovered on retry 1 of 2",
			"send completed The provider had a server error (503), recovered on retry 1 of 2 | Recovered on retry 1 of 2.",
		}},
		{"cancelled while the retry ran", true, func(c *statusCards) {
			w := retryWords("r1", 1, 0)
			c.scheduled(ctx, w)
			c.started(ctx, w.Retry) // no wait: nothing new to show
			c.ended(ctx, true, "")
		}, []string{
			"record in_progress The provider had a server error (503), retry 1 of 2",
			"send in_progress The provider had a server error (503), retry 1 of 2 | Retrying (retry 1 of 2).",
			"record failed The provider had a server error (503), cancelled",
			"send failed The provider had a server error (503), cancelled | Cancelled during retry 1 of 2.",
		}},
		// The prompt's error says why live: the card ends short, and a
		// failure with nothing open shows no card; both are recorded in
		// full, for a replay, which has no error.
		{"gave up, then a failure with nothing open", true, func(c *statusCards) {
			c.scheduled(ctx, retryWords("r1", 2, time.Second))
			c.ended(ctx, false, "gave up")
			c.ended(ctx, false, "failed again")
			c.ended(ctx, false, "") // nothing to say: no card
		}, []string{
			"record in_progress The provider had a server error (503), retry 2 of 2 in 1.0s",
			"send in_progress The provider had a server error (503), retry 2 of 2 in 1.0s | Retrying in 1.0s (retry 2 of 2).",
			"record failed gave up",
			"send failed The provider had a server error (503); gave up after 2 retries | Gave up after 2 retries; the error below says why and what to do.",
			"record failed failed again",
		}},
		{"a refusal is not an error: its card says why", true, func(c *statusCards) {
			c.scheduled(ctx, retryWords("r1", 1, time.Second))
			c.failed(ctx, "Refused", "Refused: the filter said no")
			c.failed(ctx, "Refused", "Refused again")
		}, []string{
			"record in_progress The provider had a server error (503), retry 1 of 2 in 1.0s",
			"send in_progress The provider had a server error (503), retry 1 of 2 in 1.0s | Retrying in 1.0s (retry 1 of 2).",
			"record failed Refused",
			"send failed Refused | Refused: the filter said no",
			"record failed Refused",
			"send failed Refused | Refused again",
		}},
		{"not shown as tool calls", false, func(c *statusCards) {
			c.scheduled(ctx, retryWords("r1", 1, time.Second))
			c.ended(ctx, true, "")
		}, []string{
			"record in_progress The provider had a server error (503), retry 1 of 2 in 1.0s",
			"record failed The provider had a server error (503), cancelled",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCards(tt.shown, nil)
			tt.run(&f.statusCards)
			if strings.Join(f.log, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(f.log, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	t.Run("a record that fails still shows", func(t *testing.T) {
		f := newFakeCards(true, errors.New("disk full"))
		f.scheduled(ctx, retryWords("r1", 1, time.Second))
		if len(f.log) != 2 || !strings.HasPrefix(f.log[1], "send ") {
			t.Errorf("log %q, want the record then the send", f.log)
		}
	})
	t.Run("a card opened again is a new tool call", func(t *testing.T) {
		f := newFakeCards(true, nil)
		st := &waitStatus{}
		f.showStatus(ctx, st, "a", "", acp.ToolStatusInProgress)
		first := st.id
		f.showStatus(ctx, st, "a", "", acp.ToolStatusCompleted)
		if st.id != first {
			t.Errorf("closing changed the id")
		}
		f.showStatus(ctx, st, "b", "", acp.ToolStatusInProgress)
		if st.id == first || !strings.HasPrefix(st.id, statusIDPrefix) {
			t.Errorf("reopened under %q (first %q)", st.id, first)
		}
	})
}
