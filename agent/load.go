package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	clip "github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// Loading a session: its committed conversation, the statuses of its waits
// (status.go), its last plan (plan.go) and usage (usage.go) are replayed to
// the editor before session/load is answered, from the log alone.

// load serves session/load (Agent.LoadSession): it opens the session's log
// (or uses the open one), then replays the committed conversation before
// answering, as ACP requires. The replay is of what acquire read, kept in
// memory, and holds no lock of the log's: another process may run a turn
// meanwhile, whose records this one reads at its next use. waitStatus is
// Config.WaitStatus.
func (o sessionOpener) load(ctx context.Context, req acp.LoadSessionRequest, c acp.Client, waitStatus string) (acp.LoadSessionResponse, error) {
	s, err := o.open(req.SessionID, req.Cwd, req.AdditionalDirectories, req.McpServers)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	defer o.store.done(s)
	h, err := s.history()
	if err != nil {
		return acp.LoadSessionResponse{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	msgs := h.conv.Messages()
	// Every client gets a failed turn's give-up words (the replay shows
	// them where a status call would not); only some get the status calls.
	waits := session.WaitStatuses(s.events)
	showWaits := statusCallsFor(waitStatus, c.Capabilities())
	modes, opts := o.menu.sessionConfig(s)
	err = replay(ctx, c, s.id, s.dirs.workspace(), msgs, waits, showWaits)
	if err == nil {
		err = replayUsage(ctx, c, s.id, h)
	}
	return acp.LoadSessionResponse{Modes: modes, ConfigOptions: opts}, err
}

// replay sends the committed conversation of a loaded session, and the
// statuses of its waits where they happened when showWaits (else waits
// only give a failed turn's words).
//
// Each prompt and reply goes under a messageId of its own, derived from the
// log (a reply's is the one it had live), so a second load sends the same
// ids and a client that tells messages apart by them (Zed) keeps two
// prompts apart. A turn that ended without a reply shows how it ended
// where the reply would be, in the words the user saw live: a client that
// tells messages apart by what comes between them (codecompanion) would
// otherwise glue its prompt to the next. A reply cut by a stop of
// Rebound's ends with a mark that says so.
func replay(ctx context.Context, c acp.Client, sessionID string, ws *tools.Workspace, msgs []session.Message, waits []session.WaitStatus, showWaits bool) error {
	r := replayer{c: c, sessionID: sessionID, ws: ws, giveUps: giveUpWords(waits)}
	if showWaits {
		r.waits = waits
	}
	for _, m := range msgs {
		if err := r.message(ctx, m); err != nil {
			return err
		}
	}
	if err := r.statusesBefore(ctx, 0); err != nil {
		return err
	}
	if err := r.open.end(ctx, c, sessionID, r.giveUps); err != nil {
		return err
	}
	return replayPlan(ctx, c, sessionID, msgs)
}

// replayer is one replay's state: where it is in the session, and what it
// has still to show.
type replayer struct {
	c         acp.Client
	sessionID string
	ws        *tools.Workspace
	giveUps   map[int]string       // the words of each failed turn's give-up (giveUpWords)
	waits     []session.WaitStatus // the statuses still to show, in log order
	open      turnReplay           // the turn being replayed
}

// message replays m, after the statuses recorded before it.
func (r *replayer) message(ctx context.Context, m session.Message) error {
	if err := r.statusesBefore(ctx, m.Seq); err != nil {
		return err
	}
	if isPlanUpdate(m) {
		return nil // the last plan is replayed at the end (replayPlan)
	}
	switch m.Role {
	case session.RoleUser:
		return r.prompt(ctx, m)
	case session.RoleCompaction:
		return r.compaction(ctx, m)
	case session.RoleAssistant:
		return r.reply(ctx, m)
	case session.RoleTool:
		return r.toolCall(ctx, m)
	}
	return nil
}

// statusesBefore shows the statuses recorded before seq (all when 0).
func (r *replayer) statusesBefore(ctx context.Context, seq int64) error {
	var err error
	r.waits, err = replayStatuses(ctx, r.c, r.sessionID, r.waits, seq, &r.open, r.giveUps)
	return err
}

// prompt ends the turn before and shows m, the next turn's prompt, as the
// person typed it.
func (r *replayer) prompt(ctx context.Context, m session.Message) error {
	if err := r.open.end(ctx, r.c, r.sessionID, r.giveUps); err != nil {
		return err
	}
	r.open = turnReplay{user: m}
	id := replayedID("user", m)
	for _, b := range promptBlocks(m) {
		if b.Type == "text" && b.Text == "" {
			// An empty text block (some clients send one first) shows
			// nothing, and ACP's text block needs text.
			continue
		}
		if err := r.c.Update(ctx, r.sessionID, acp.UserMessageChunk(id, b)); err != nil {
			return err
		}
	}
	return nil
}

// promptBlocks are the blocks of a recorded prompt as the editor showed
// them: a slash command as typed, not the prompt it ran.
func promptBlocks(m session.Message) []acp.ContentBlock {
	var blocks []acp.ContentBlock
	if err := json.Unmarshal(m.Prompt, &blocks); err != nil || len(blocks) == 0 {
		blocks = []acp.ContentBlock{acp.TextBlock(m.Text)}
	}
	if len(blocks) == 1 && blocks[0].Type == "text" {
		if typed, ok := typedCommand(blocks[0].Text); ok {
			blocks[0] = acp.TextBlock(typed)
		}
	}
	return blocks
}

// compaction shows a compaction as the editor was told of it, to a client
// that shows compactions.
func (r *replayer) compaction(ctx context.Context, m session.Message) error {
	if !r.c.Capabilities().Compaction() {
		return nil
	}
	u := acp.CompactionCompleted(m.CompactionID, []acp.ContentBlock{acp.TextBlock(m.Text)})
	if m.Failed != "" { // as the editor was told when it failed
		u = acp.CompactionFailed(m.CompactionID, m.Failed)
	}
	return r.c.Update(ctx, r.sessionID, u)
}

// reply shows a committed reply, its thoughts first, under the id it had
// live.
func (r *replayer) reply(ctx context.Context, m session.Message) error {
	id := cmp.Or(m.MessageID, replayedID("reply", m))
	if m.Reasoning != "" {
		if err := sendChunk(ctx, r.c, r.sessionID, acp.UpdateAgentThoughtChunk, id, m.Reasoning); err != nil {
			return err
		}
	}
	if m.Text != "" || len(m.ToolCalls) == 0 {
		if err := sendChunk(ctx, r.c, r.sessionID, acp.UpdateAgentMessageChunk, id, m.Text); err != nil {
			return err
		}
	}
	r.open.cut = false
	if m.Text != "" {
		r.open.shown, r.open.text, r.open.statusLast = true, true, false
		r.open.cut = m.Incomplete
	}
	return nil
}

// toolCall shows a recorded tool call as the editor saw it last.
func (r *replayer) toolCall(ctx context.Context, m session.Message) error {
	if err := r.c.Update(ctx, r.sessionID, replayedToolCall(m, r.ws)); err != nil {
		return err
	}
	r.open.shown, r.open.statusLast, r.open.cut = true, false, false
	return nil
}

// replayedID is the messageId a replay gives message m of the log: from
// its turn and the seq of its record, so the same on every load and never
// another message's. kind keeps it apart from ids of other kinds.
func replayedID(kind string, m session.Message) string {
	return fmt.Sprintf("%s%s_%d_%d", reboundIDPrefix, kind, m.Turn, m.Seq)
}

// turnReplay is what a replay has shown of the turn it is in.
type turnReplay struct {
	user session.Message // the turn's prompt; Seq 0 before the first
	// shown: a reply's text or a tool call came after the prompt, which
	// every client shows apart from it.
	shown bool
	// text: a reply's text was shown. Only text keeps two prompts apart in
	// every client: codecompanion's restore draws no tool call, so a turn
	// of cards alone would glue its prompt to the next.
	text bool
	// status: a status call of the turn's was shown; statusLast: it was
	// the last thing shown.
	status, statusLast bool
	// cut: the last thing shown was the text of a reply cut short.
	cut bool
}

// isGiveUp reports whether u, a status of this turn, is its give-up: the
// card that ended a failed turn in the words of the prompt's error.
func (t *turnReplay) isGiveUp(u acp.SessionUpdate, giveUps map[int]string) bool {
	why, ok := giveUps[t.user.Turn]
	if !ok || t.user.Seq == 0 || t.user.TurnOutcome != session.OutcomeTurnFailed || u.Status != string(acp.ToolStatusFailed) {
		return false
	}
	return statusWords(u) == why
}

// end closes the turn's replay with a line of text where it ended with no
// reply's text shown, was cut by a stop of Rebound's, or failed: it says
// how it ended (turnEndWords). A failed turn always ends so: live, the
// prompt's error said why, after the card, and every client shows text.
func (t *turnReplay) end(ctx context.Context, c acp.Client, sessionID string, giveUps map[int]string) error {
	outcome := t.user.TurnOutcome
	switch {
	case t.user.Seq == 0 || outcome == "":
		return nil
	case outcome == session.OutcomeTurnInterrupted:
		// Unless its status, shown last after the reply's text, already
		// says so: nothing else says the turn was cut.
		if t.statusLast && t.text {
			return nil
		}
	case outcome == session.OutcomeTurnFailed:
		t.cut = t.text
	case t.text:
		return nil
	}
	words := turnEndWords(outcome, giveUps[t.user.Turn], t.cut)
	if t.text {
		// After the reply's text, as a message of its own: the reply's
		// id stands for what the log committed, and a client that joins
		// the two (codecompanion) still shows the line apart.
		words = "\n\n" + words
	}
	t.shown, t.text = true, true
	return sendChunk(ctx, c, sessionID, acp.UpdateAgentMessageChunk, replayedID("end", t.user), words)
}

// maxGiveUpLine bounds the words of a failed turn's replayed line.
const maxGiveUpLine = 600

// turnEndWords says how a turn ended, as the user saw it live: a stop of
// Rebound's as recovery.StoppedMark (replied: after the cut reply), a
// failure in its give-up's words (giveUp, the words of its last failed
// status, which the live error said too), a cancel as the client showed
// it.
func turnEndWords(outcome, giveUp string, replied bool) string {
	switch outcome {
	case session.OutcomeTurnInterrupted:
		return recovery.StoppedMark(replied)
	case session.OutcomeTurnFailed:
		// One inert line, bounded, whose markdown shows as itself: the
		// words quote a provider's message.
		return "[" + clip.InertLine(clip.InertMarkdown(cmp.Or(giveUp, "The request failed.")), maxGiveUpLine) + "]"
	case "cancelled":
		return "[Cancelled.]"
	}
	return "[The turn ended without a reply.]"
}

// giveUpWords is the words of each failed turn's last failed status, by
// turn: what the live give-up said, as a status and as the error.
func giveUpWords(waits []session.WaitStatus) map[int]string {
	out := map[int]string{}
	for _, w := range waits {
		if u := replayedStatus(w); u.Status == string(acp.ToolStatusFailed) {
			out[w.Turn] = statusWords(u)
		}
	}
	return out
}

// statusWords is what a status says: its body, which the title may clip,
// or its title.
func statusWords(u acp.SessionUpdate) string {
	if len(u.ToolContent) > 0 && u.ToolContent[0].Content != nil && u.ToolContent[0].Content.Text != "" {
		return u.ToolContent[0].Content.Text
	}
	return u.Title
}

// replayedToolCall is a recorded tool call as the editor saw it last: its
// title and kind, its final status, and what it showed (a command's output
// as text, since its terminal is gone).
func replayedToolCall(m session.Message, ws *tools.Workspace) acp.SessionUpdate {
	u := acp.ToolCallUpdate{ToolCallID: shownCallID(m.ToolCallID), Title: m.ToolName, Name: m.ToolName,
		Kind: acp.ToolKindOther, Status: acp.ToolStatusFailed}.AsStart()
	if m.Status == session.ToolCompleted {
		u.Status = acp.ToolStatusCompleted
	}
	call := m.Call
	if call == nil {
		// Never dispatched: describe it from what the model asked.
		call = &session.ToolCall{Name: m.ToolName, Arguments: m.Arguments}
		if args, err := tools.Parse(m.ToolName, m.Arguments); err == nil {
			info := tools.Describe(ws, args)
			call.Title, call.Kind, call.Locations = info.Title, info.Kind, info.Locations
		}
	}
	u.Title, u.Kind, u.Locations, u.RawInput = cmp.Or(call.Title, call.Name), acp.ToolKind(cmp.Or(call.Kind, string(acp.ToolKindOther))), locations(call.Locations), shownInput(call.Name, call.Arguments)
	var content []acp.ToolCallContent
	if len(m.Content) == 0 || json.Unmarshal(m.Content, &content) != nil {
		content = []acp.ToolCallContent{acp.ContentText(m.Text)}
	}
	u.ToolContent = content
	return u
}
