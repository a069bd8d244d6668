package agent

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
)

// goneEditor is an acp.Client whose updates all fail; it notes whether
// each came with a live context.
type goneEditor struct {
	acp.Client
	sent      []acp.SessionUpdate
	cancelled int
}

func (e *goneEditor) Update(ctx context.Context, _ string, u acp.SessionUpdate) error {
	e.sent = append(e.sent, u)
	if ctx.Err() != nil {
		e.cancelled++
	}
	return errors.New("editor gone")
}

// TestAgent_NotifyIsBestEffort: the one best-effort send sends even from a
// cancelled turn (the spec lets it send its last updates), and a failure
// is logged with the caller's words and the session, never returned.
func TestAgent_NotifyIsBestEffort(t *testing.T) {
	var logs bytes.Buffer
	a := &Agent{cfg: Config{Logger: zerolog.New(&logs).Level(zerolog.DebugLevel)}}
	e := &goneEditor{}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	notify(ctx, &a.cfg.Logger, e, "sess_1", acp.SessionInfoUpdate("t", ""), "could not send the session's title")
	notifier(&a.cfg.Logger, e, "sess_2")(ctx, acp.Notice("info", "x", ""))
	if len(e.sent) != 2 || e.cancelled != 0 {
		t.Fatalf("sent %d updates, %d with a cancelled context; want 2, none", len(e.sent), e.cancelled)
	}
	for _, want := range []string{
		`"session":"sess_1","message":"could not send the session's title"`,
		`"session":"sess_2","message":"could not send a status update"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}
