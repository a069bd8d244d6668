package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// The parts the Agent's handlers delegate to, each tested alone with
// fakes of what it depends on.

// errorCode is the JSON-RPC code of err, 0 when it is no request error.
func errorCode(err error) int {
	if re, ok := errors.AsType[*acp.RequestError](err); ok {
		return re.Code
	}
	return 0
}

// routes is a ProviderRoutes that keeps the route set, and may refuse.
type routes struct {
	base    string
	headers map[string]string
	refuse  error
}

func (r *routes) BaseURL() string { return r.base }
func (r *routes) Route(base string, h map[string]string) error {
	if r.refuse != nil {
		return r.refuse
	}
	r.base, r.headers = base, h
	return nil
}

// providerRouter: main is listed where it routes now; set routes it, and
// only it, only over the OpenAI protocol; disable always refuses; a
// refusal of the route is an error that says so and changes nothing.
func TestProviderRouter(t *testing.T) {
	nop := zerolog.Nop()
	if (providerRouter{log: &nop}).configurable() {
		t.Error("configurable without routes")
	}
	r := &routes{base: "https://a/v1"}
	p := providerRouter{routes: r, log: &nop}
	if !p.configurable() {
		t.Error("not configurable with routes")
	}
	if got := p.list().Providers; len(got) != 1 || got[0].ProviderID != MainProvider || !got[0].Required || got[0].Current.BaseURL != "https://a/v1" {
		t.Fatalf("list = %+v", got)
	}
	if err := p.set(acp.SetProviderRequest{ProviderID: MainProvider, APIType: acp.LlmProtocolOpenAI, BaseURL: "https://b/v1", Headers: map[string]string{"X": "y"}}); err != nil {
		t.Fatal(err)
	}
	if r.base != "https://b/v1" || r.headers["X"] != "y" || p.list().Providers[0].Current.BaseURL != "https://b/v1" {
		t.Errorf("after set: %+v", r)
	}
	for _, req := range []acp.SetProviderRequest{
		{ProviderID: "other", APIType: acp.LlmProtocolOpenAI, BaseURL: "https://c/v1"},
		{ProviderID: MainProvider, APIType: "anthropic", BaseURL: "https://c/v1"},
	} {
		if err := p.set(req); errorCode(err) != acp.CodeInvalidParams {
			t.Errorf("set %+v: %v, want invalid params", req, err)
		}
	}
	r.refuse = errors.New("not a URL")
	if err := p.set(acp.SetProviderRequest{ProviderID: MainProvider, APIType: acp.LlmProtocolOpenAI, BaseURL: "x"}); err == nil || !strings.Contains(err.Error(), "route provider main: not a URL") {
		t.Errorf("refused route: %v", err)
	}
	if r.base != "https://b/v1" {
		t.Errorf("a refused set changed the route to %s", r.base)
	}
	for _, id := range []string{MainProvider, "other"} {
		if err := p.disable(acp.DisableProviderRequest{ProviderID: id}); errorCode(err) != acp.CodeInvalidParams {
			t.Errorf("disable %s: %v, want invalid params", id, err)
		}
	}
}

// optionSets is optionSetter's set: it keeps what it was asked, and says
// changed unless the value is the one it holds.
type optionSets struct {
	asked []string
	err   error
}

func (o *optionSets) set(_ context.Context, s *sessionState, id, value string) (bool, error) {
	o.asked = append(o.asked, id+"="+value)
	if o.err != nil {
		return false, o.err
	}
	cur := s.options.current()
	if *cur.field(id) == value {
		return false, nil
	}
	*cur.field(id) = value
	s.options.load(cur)
	return true, nil
}

// updates is an acp.Client that keeps the kinds of the updates it is sent.
type updates struct {
	acp.Client
	kinds []string
}

func (u *updates) Update(_ context.Context, _ string, up acp.SessionUpdate) error {
	u.kinds = append(u.kinds, up.SessionUpdate)
	return nil
}

func testMenu() *configMenu {
	nop := zerolog.Nop()
	return &configMenu{model: "m", models: &catalog{provider: func() llm.Provider { return stubProvider{} }, model: "m", fallback: []string{"m", "o"}, log: &nop}}
}

// optionSetter: a request is checked against what the menu offers before
// the session is asked for or set touched; a change is told to the editor
// (the options after set_mode, the mode after set_config_option of the
// mode), a value already set is not; the session's error comes back as it
// is.
func TestOptionSetter(t *testing.T) {
	nop := zerolog.Nop()
	menu := testMenu()
	s := &sessionState{id: "sess_1", options: optionWriter{opts: menu.defaults()}}
	sets := &optionSets{}
	var looked []string
	o := optionSetter{session: func(id string) (*sessionState, error) {
		looked = append(looked, id)
		if id != s.id {
			return nil, acp.NewSessionNotFound(id)
		}
		return s, nil
	}, set: sets.set, menu: menu, log: &nop}
	ctx := t.Context()
	value := func(v string) json.RawMessage { b, _ := json.Marshal(v); return b }

	for _, tc := range []struct {
		name  string
		do    func(c acp.Client) error
		code  int
		asked string   // what set was asked, "" for nothing
		sent  []string // the updates the editor got
	}{
		{"unknown mode", func(c acp.Client) error {
			return o.setMode(ctx, acp.SetSessionModeRequest{SessionID: s.id, ModeID: "nope"}, c)
		}, acp.CodeInvalidParams, "", nil},
		{"mode", func(c acp.Client) error {
			return o.setMode(ctx, acp.SetSessionModeRequest{SessionID: s.id, ModeID: ModeReadOnly}, c)
		}, 0, "mode=" + ModeReadOnly, []string{acp.UpdateConfigOption}},
		{"same mode", func(c acp.Client) error {
			return o.setMode(ctx, acp.SetSessionModeRequest{SessionID: s.id, ModeID: ModeReadOnly}, c)
		}, 0, "mode=" + ModeReadOnly, nil},
		{"unknown session", func(c acp.Client) error {
			return o.setMode(ctx, acp.SetSessionModeRequest{SessionID: "sess_2", ModeID: ModeReadOnly}, c)
		}, acp.CodeResourceNotFound, "", nil},
		{"unknown option", func(c acp.Client) error {
			_, err := o.setConfigOption(ctx, acp.SetSessionConfigOptionRequest{SessionID: s.id, ConfigID: "colour", Value: value("red")}, c)
			return err
		}, acp.CodeInvalidParams, "", nil},
		{"not a value", func(c acp.Client) error {
			_, err := o.setConfigOption(ctx, acp.SetSessionConfigOptionRequest{SessionID: s.id, ConfigID: ModelConfigID, Value: value("zz")}, c)
			return err
		}, acp.CodeInvalidParams, "", nil},
		{"boolean", func(c acp.Client) error {
			_, err := o.setConfigOption(ctx, acp.SetSessionConfigOptionRequest{SessionID: s.id, ConfigID: ModelConfigID, Type: "boolean", Value: value("o")}, c)
			return err
		}, acp.CodeInvalidParams, "", nil},
		{"model", func(c acp.Client) error {
			opts, err := o.setConfigOption(ctx, acp.SetSessionConfigOptionRequest{SessionID: s.id, ConfigID: ModelConfigID, Value: value("o")}, c)
			if err == nil && len(opts) == 0 {
				err = errors.New("answered without the options")
			}
			return err
		}, 0, "model=o", nil},
		{"mode as an option", func(c acp.Client) error {
			_, err := o.setConfigOption(ctx, acp.SetSessionConfigOptionRequest{SessionID: s.id, ConfigID: ModeConfigID, Value: value(ModeAsk)}, c)
			return err
		}, 0, "mode=" + ModeAsk, []string{acp.UpdateCurrentMode}},
	} {
		c := &updates{}
		sets.asked, looked = nil, nil
		err := tc.do(c)
		if code := errorCode(err); code != tc.code || tc.code == 0 && err != nil {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
		if got := strings.Join(sets.asked, ","); got != tc.asked {
			t.Errorf("%s: set asked %q, want %q", tc.name, got, tc.asked)
		}
		if strings.Join(c.kinds, ",") != strings.Join(tc.sent, ",") {
			t.Errorf("%s: the editor got %q, want %q", tc.name, c.kinds, tc.sent)
		}
		if strings.HasPrefix(tc.name, "unknown ") && tc.code == acp.CodeInvalidParams && len(looked) != 0 {
			// Only a value is checked against the session's options.
			t.Errorf("%s: an invalid request looked the session up", tc.name)
		}
	}
	// A failure to record comes back as it is, and tells the editor nothing.
	sets.err = errors.New("disk full")
	c := &updates{}
	if err := o.setMode(ctx, acp.SetSessionModeRequest{SessionID: s.id, ModeID: ModeReadOnly}, c); !errors.Is(err, sets.err) || len(c.kinds) != 0 {
		t.Errorf("set failing: %v, sent %q", err, c.kinds)
	}
}

// sessionsOnDisk is a sessionFinder: the sessions held, and the cwd each
// log names; acquire reads it, as the store's does.
type sessionsOnDisk struct {
	held    map[string]*sessionState
	cwd     map[string]string
	failing error // acquire fails with it
	uses    int   // acquires not yet done
}

func (d *sessionsOnDisk) lookup(id string) (*sessionState, error) {
	if s, ok := d.held[id]; ok {
		return s, nil
	}
	return nil, acp.NewSessionNotFound(id)
}

func (d *sessionsOnDisk) state(id string) (*sessionState, error) {
	if _, ok := d.cwd[id]; !ok {
		return nil, acp.NewSessionNotFound(id)
	}
	s := &sessionState{id: id}
	d.held[id] = s
	return s, nil
}

func (d *sessionsOnDisk) acquire(s *sessionState, write bool) error {
	if d.failing != nil {
		return d.failing
	}
	d.uses++
	s.dirs.cwd = d.cwd[s.id]
	return nil
}

func (d *sessionsOnDisk) done(s *sessionState) {
	d.uses--
	s.unlockTurn()
}

// reopener: off, only the sessions held are found; on, one with a log is
// opened from it, used and let go of (its turnMu free again, whatever
// happened), and refused when its log names no working directory.
func TestReopener(t *testing.T) {
	nop := zerolog.Nop()
	d := &sessionsOnDisk{held: map[string]*sessionState{"sess_held": {id: "sess_held"}},
		cwd: map[string]string{"sess_a": "/p", "sess_nocwd": ""}}
	r := &reopener{store: d, log: &nop}
	if s, err := r.session("sess_held"); err != nil || s.id != "sess_held" {
		t.Fatalf("held: %v, %v", s, err)
	}
	if _, err := r.session("sess_a"); errorCode(err) != acp.CodeResourceNotFound {
		t.Fatalf("off: %v, want not found", err)
	}
	r.on.Store(true)
	s, err := r.session("sess_a")
	if err != nil || s.dirs.cwd != "/p" {
		t.Fatalf("on: %+v, %v", s, err)
	}
	if d.uses != 0 || !s.turnMu.TryLock() {
		t.Fatalf("the reopened session is still in use (%d uses)", d.uses)
	}
	s.unlockTurn()
	if _, err := r.session("sess_nocwd"); err == nil || !strings.Contains(err.Error(), "no absolute working directory") {
		t.Errorf("no cwd: %v", err)
	}
	if _, err := r.session("sess_none"); errorCode(err) != acp.CodeResourceNotFound {
		t.Errorf("no log: %v, want not found", err)
	}
	d.failing = errors.New("locked")
	if _, err := r.session("sess_b"); err == nil {
		t.Error("no error for a session without a log")
	}
	d.cwd["sess_c"] = "/c"
	if _, err := r.session("sess_c"); !errors.Is(err, d.failing) || !d.held["sess_c"].turnMu.TryLock() {
		t.Errorf("a failed acquire: %v, or its turnMu still held", err)
	}
}

// summaries is summaryPages over a list already in the index's order.
type summaries struct {
	list []session.Summary
	err  error
}

func (x summaries) Page(after *session.Summary, n int, keep func(session.Summary) bool) ([]session.Summary, bool, error) {
	if x.err != nil {
		return nil, false, x.err
	}
	var page []session.Summary
	started := after == nil
	for _, s := range x.list {
		if !started {
			started = s.SessionID == after.SessionID
			continue
		}
		if keep(s) {
			if len(page) == n {
				return page, true, nil
			}
			page = append(page, s)
		}
	}
	return page, false, nil
}

// listSessions: sessions without a title are left out, a cwd keeps only
// its own, pages follow their cursors, a bad page size or cursor is
// invalid params, and the index's failure names the state directory.
func TestListSessions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sum := func(id, cwd, title string, sec int) session.Summary {
		return session.Summary{SessionID: "sess_" + id, Cwd: cwd, Title: title, UpdatedAt: t0.Add(time.Duration(sec) * time.Second)}
	}
	idx := summaries{list: []session.Summary{sum("a", "/p", "A", 5), sum("b", "/p/", "", 4), sum("c", "/q", "C", 3), sum("d", "/p", "D", 2), sum("e", "/p", "E", 1)}}
	dir := stateDir{path: "/state"}
	ids := func(r acp.ListSessionsResponse) string {
		var out []string
		for _, s := range r.Sessions {
			out = append(out, strings.TrimPrefix(s.SessionID, "sess_"))
		}
		return strings.Join(out, ",")
	}
	r, err := listSessions(idx, dir, acp.ListSessionsRequest{})
	if err != nil || ids(r) != "a,c,d,e" || r.NextCursor != "" {
		t.Fatalf("all: %q %q, %v", ids(r), r.NextCursor, err)
	}
	if r.Sessions[0].UpdatedAt != "2026-01-01T00:00:05.000Z" {
		t.Errorf("updatedAt %q", r.Sessions[0].UpdatedAt)
	}
	var pages []string
	cursor := ""
	for range 5 {
		r, err := listSessions(idx, dir, acp.ListSessionsRequest{Cwd: "/p/", Cursor: cursor, Meta: acp.Meta{PageSizeMetaKey: float64(2)}})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, ids(r))
		if cursor = r.NextCursor; cursor == "" {
			break
		}
	}
	if got := strings.Join(pages, "|"); got != "a,d|e" {
		t.Errorf("pages of /p: %q, want a,d|e", got)
	}
	for _, req := range []acp.ListSessionsRequest{
		{Meta: acp.Meta{PageSizeMetaKey: float64(0)}},
		{Meta: acp.Meta{PageSizeMetaKey: 2.5}},
		{Meta: acp.Meta{PageSizeMetaKey: "2"}},
		{Cursor: "nonsense"},
	} {
		if _, err := listSessions(idx, dir, req); errorCode(err) != acp.CodeInvalidParams {
			t.Errorf("%+v: %v, want invalid params", req, err)
		}
	}
	_, err = listSessions(summaries{err: errors.New("index unreadable")}, dir, acp.ListSessionsRequest{})
	re, ok := errors.AsType[*acp.RequestError](err)
	if !ok || re.Code != acp.CodeInternalError || !strings.Contains(re.Message, "index unreadable") || re.Data.(map[string]any)["stateDir"] != "/state" {
		t.Errorf("failing index: %#v", err)
	}
}

// heldSessions is sessionsHeld: the sessions held, and what was done to
// them.
type heldSessions struct {
	held map[string]*sessionState
	did  []string
}

func (h *heldSessions) holding(id string) (*sessionState, error) { return h.held[id], nil }
func (h *heldSessions) drop(s *sessionState)                     { h.did = append(h.did, "drop "+s.id) }
func (h *heldSessions) closeLog(s *sessionState)                 { h.did = append(h.did, "closeLog "+s.id) }
func (h *heldSessions) forget(s *sessionState)                   { h.did = append(h.did, "forget "+s.id) }

// indexEntries is the index a deleted session leaves.
type indexEntries struct{ removed []string }

func (x *indexEntries) Remove(id string) error { x.removed = append(x.removed, id); return nil }

// sessionRemover: close drops a session held and waits for its use to
// end; one not held is closed already if it has a log, else not found.
// delete refuses a session in use, removes the log, and forgets it here
// and in the index; one with no log is not found, and nothing changes.
func TestSessionRemover(t *testing.T) {
	nop := zerolog.Nop()
	dir := t.TempDir()
	mk := func(id string) *sessionState {
		t.Helper()
		l, err := session.Create(dir, id, session.SessionStart{SessionID: id, Cwd: "/p"})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		return &sessionState{id: id}
	}
	a, b, c := mk("sess_a"), mk("sess_b"), mk("sess_c")
	h := &heldSessions{held: map[string]*sessionState{a.id: a, c.id: c}}
	x := &indexEntries{}
	r := sessionRemover{store: h, index: x, dir: stateDir{path: dir}, log: &nop}

	if err := r.close(a.id); err != nil || strings.Join(h.did, ",") != "drop sess_a" {
		t.Errorf("close of a held session: %v, did %q", err, h.did)
	}
	if err := r.close(b.id); err != nil {
		t.Errorf("close of a session not held: %v", err)
	}
	if err := r.close("sess_none"); errorCode(err) != acp.CodeResourceNotFound {
		t.Errorf("close of no session: %v", err)
	}

	h.did = nil
	c.turnMu.Lock()
	if err := r.delete(c.id); errorCode(err) != acp.CodeSessionBusy || len(h.did) != 0 || len(x.removed) != 0 {
		t.Errorf("delete while in use: %v, did %q, index %q", err, h.did, x.removed)
	}
	c.unlockTurn()
	if err := r.delete(c.id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(session.Path(dir, c.id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("log still there: %v", err)
	}
	if got := strings.Join(h.did, ","); got != "closeLog sess_c,forget sess_c" || strings.Join(x.removed, ",") != c.id {
		t.Errorf("delete did %q, removed from the index %q", got, x.removed)
	}
	if err := r.delete(b.id); err != nil || strings.Join(x.removed, ",") != "sess_c,sess_b" {
		t.Errorf("delete of a session not held: %v, index %q", err, x.removed)
	}
	if err := r.delete("sess_none"); errorCode(err) != acp.CodeResourceNotFound {
		t.Errorf("delete of no session: %v", err)
	}
}

// signIn alone: the terminal method carries its command line in _meta
// only when the command is known, and a forget hook set later is the one
// logout uses.
func TestSignIn_MethodsAndForget(t *testing.T) {
	nop := zerolog.Nop()
	g := &signIn{keyEnv: "K", log: &nop}
	m := g.methods()
	if len(m) != 2 || m[0].ID != AuthMethodAPIKey || m[1].ID != AuthMethodLogin || m[1].Meta != nil || !strings.Contains(m[0].Description, "K in the environment") {
		t.Fatalf("methods without a command: %+v", m)
	}
	g.login = LoginCommand("/bin/rebound", nil)
	if meta, ok := g.methods()[1].Meta[acp.TerminalAuthMetaKey].(acp.TerminalAuthMeta); !ok || meta.Command != "/bin/rebound" {
		t.Errorf("terminal method _meta = %v", meta)
	}
	called := 0
	g.setForget(func() (Forgotten, error) { called++; return Forgotten{Name: "K", Path: "/c", Removed: true}, nil })
	res, err := g.logout()
	if err != nil || called != 1 || res.Meta["rebound/logout"].(map[string]any)["removed"] != true {
		t.Errorf("logout: %+v, %v, forget called %d times", res, err, called)
	}
}

// forker alone: a fork of no session is not found and opens nothing; a
// fork is a new log holding the parent's finished turns, opened through
// resume with the editor's directory.
func TestForker(t *testing.T) {
	nop := zerolog.Nop()
	dir := t.TempDir()
	parent, err := session.Create(dir, "sess_p", session.SessionStart{SessionID: "sess_p", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []struct {
		typ  string
		data any
	}{
		{session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"}},
		{session.TypeTurnEnd, session.TurnEnd{Turn: 1, StopReason: "end_turn"}},
		{session.TypeTurnStart, session.TurnStart{Turn: 2, Text: "running"}},
	} {
		if _, err := parent.Append(ev.typ, ev.data); err != nil {
			t.Fatal(err)
		}
	}
	parent.Close()
	var resumed []acp.ResumeSessionRequest
	f := forker{dir: stateDir{path: dir}, model: func() string { return "m" }, version: "v", log: &nop,
		resume: func(req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
			resumed = append(resumed, req)
			return acp.ResumeSessionResponse{}, nil
		}}
	if _, err := f.fork(acp.ForkSessionRequest{SessionID: "sess_none", Cwd: "/q"}); errorCode(err) != acp.CodeResourceNotFound || len(resumed) != 0 {
		t.Fatalf("fork of no session: %v, resumed %d", err, len(resumed))
	}
	res, err := f.fork(acp.ForkSessionRequest{SessionID: "sess_p", Cwd: "/q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resumed) != 1 || resumed[0].SessionID != res.SessionID || resumed[0].Cwd != "/q" {
		t.Fatalf("resumed %+v for fork %s", resumed, res.SessionID)
	}
	ld, err := session.Load(session.Path(dir, res.SessionID))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range ld.Events {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, ","); got != strings.Join([]string{session.TypeSessionStart, session.TypeTurnStart, session.TypeTurnEnd}, ",") {
		t.Errorf("fork's events: %s", got)
	}
}

// afterAnswer alone: every answer is followed by the slash commands, and
// an answer owed no model list gets nothing more.
func TestAfterAnswer_SendsTheCommands(t *testing.T) {
	nop := zerolog.Nop()
	menu := testMenu()
	f := afterAnswer{catalog: menu.models, menu: menu, log: &nop,
		whileHeld: func(*sessionState, func()) bool {
			t.Error("an answer owed nothing was followed by its options")
			return false
		}}
	c := &updates{}
	f.answered(t.Context(), "sess_1", c)
	if strings.Join(c.kinds, ",") != acp.UpdateAvailableCommands {
		t.Errorf("after the answer: %q", c.kinds)
	}
}
