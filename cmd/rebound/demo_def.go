package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/rebound-agent/rebound/agent/llm/mockprovider"
)

// demoDefaultJSON is the conversation `rebound demo` plays without --script.
//
//go:embed demo/default.json
var demoDefaultJSON []byte

// demoDef is a demo definition: the agent's config and the scenes to play.
type demoDef struct {
	// Model is provider.model of the agent; default gpt-4o-mini.
	Model string `json:"model,omitempty"`
	// Recovery is written as the agent's [recovery] table: keys as in the
	// README, nested objects become sub-tables ([recovery.truncation]).
	Recovery map[string]any `json:"recovery,omitempty"`
	// Project is the files of the project directory the session works in
	// (path → content): a new temporary directory, removed at the end.
	Project map[string]string `json:"project,omitempty"`
	Scenes  []demoScene       `json:"scenes"`
	// Fallback answers every request after all scenes' steps are used.
	Fallback *mockprovider.Step `json:"fallback,omitempty"`

	// plain: made from a bare mock script; prompts are sent one at a time
	// until its steps are used up, with no expectations.
	plain bool
}

// demoScene is one prompt and the mock steps that answer its requests.
type demoScene struct {
	Title  string              `json:"title"`
	Note   string              `json:"note,omitempty"`
	Prompt string              `json:"prompt"`
	Steps  []mockprovider.Step `json:"steps"`
	// CancelAfter sends session/cancel this long after the first retry of
	// the turn is scheduled (a Go duration).
	CancelAfter string `json:"cancel_after,omitempty"`
	// Expect is the outcome that counts as success: a stop reason
	// (end_turn, cancelled, max_tokens, refusal) or "error". Empty accepts
	// any outcome.
	Expect string `json:"expect,omitempty"`

	cancelAfter time.Duration
}

var demoExpectations = []string{"end_turn", "cancelled", "max_tokens", "max_turn_requests", "refusal", "error"}

// parseDemoFile reads --script: a demo definition (it has "scenes") or a
// plain mock script.
func parseDemoFile(data []byte) (*demoDef, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := top["scenes"]; ok {
		return parseDemoDef(data)
	}
	script, err := mockprovider.ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("neither a demo definition (no \"scenes\") nor a valid %w", err)
	}
	return demoFromScript(script), nil
}

// demoFromScript plays a bare mock script: one prompt at a time until every
// step has answered a request (at least one prompt).
func demoFromScript(s *mockprovider.Script) *demoDef {
	d := &demoDef{Fallback: s.Fallback, plain: true}
	d.inheritDefault()
	if len(s.Steps) > 0 {
		d.Scenes = []demoScene{{Steps: s.Steps}}
	}
	return d
}

func parseDemoDef(data []byte) (*demoDef, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var d demoDef
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("demo definition: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("demo definition: unexpected data after the object")
	}
	if len(d.Scenes) == 0 {
		return nil, errors.New("demo definition: scenes: at least one scene is needed")
	}
	for _, name := range slices.Sorted(maps.Keys(d.Project)) {
		if !filepath.IsLocal(name) || strings.Contains(name, `\`) {
			return nil, fmt.Errorf("demo definition: project: %q is not a relative path inside the project (like \"README.md\" or \"cmd/main.go\")", name)
		}
	}
	d.inheritDefault()
	for i := range d.Scenes {
		sc := &d.Scenes[i]
		where := fmt.Sprintf("demo definition: scenes[%d]", i)
		if strings.TrimSpace(sc.Prompt) == "" {
			return nil, fmt.Errorf("%s: prompt: missing", where)
		}
		if sc.Title == "" {
			sc.Title = fmt.Sprintf("Scene %d", i+1)
		}
		if err := (&mockprovider.Script{Steps: sc.Steps}).Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if sc.CancelAfter != "" {
			dur, err := time.ParseDuration(sc.CancelAfter)
			if err != nil || dur < 0 {
				return nil, fmt.Errorf("%s: cancel_after: %q is not a non-negative duration like \"1.5s\"", where, sc.CancelAfter)
			}
			sc.cancelAfter = dur
		}
		if sc.Expect != "" && !slices.Contains(demoExpectations, sc.Expect) {
			return nil, fmt.Errorf("%s: expect: %q is not one of %s", where, sc.Expect, strings.Join(demoExpectations, ", "))
		}
	}
	if d.Fallback != nil {
		if err := (&mockprovider.Script{Fallback: d.Fallback}).Validate(); err != nil {
			return nil, fmt.Errorf("demo definition: %w", err)
		}
	}
	if _, err := d.configTOML(); err != nil {
		return nil, err
	}
	return &d, nil
}

// inheritDefault gives a definition without "model", "recovery" or
// "project" (and a plain mock script) the built-in demo's: quick,
// unjittered waits that --fast can scale, and the small project the
// built-in scenes read. "recovery": {} asks for the agent's own defaults,
// "project": {} for an empty directory.
func (d *demoDef) inheritDefault() {
	if d.Model != "" && d.Recovery != nil && d.Project != nil {
		return
	}
	var base struct {
		Model    string            `json:"model"`
		Recovery map[string]any    `json:"recovery"`
		Project  map[string]string `json:"project"`
	}
	dec := json.NewDecoder(bytes.NewReader(demoDefaultJSON))
	dec.UseNumber()
	if dec.Decode(&base) != nil {
		return // the embedded definition is checked by a test
	}
	if d.Model == "" {
		d.Model = base.Model
	}
	if d.Recovery == nil {
		d.Recovery = base.Recovery
	}
	if d.Project == nil {
		d.Project = base.Project
	}
}

// writeProject creates the project's files under dir.
func (d *demoDef) writeProject(dir string) error {
	for _, name := range slices.Sorted(maps.Keys(d.Project)) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(d.Project[name]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// script is the mock's one global sequence: the scenes' steps in order.
func (d *demoDef) script() *mockprovider.Script {
	s := &mockprovider.Script{Fallback: d.Fallback}
	for _, sc := range d.Scenes {
		s.Steps = append(s.Steps, sc.Steps...)
	}
	return s
}

// configTOML is the agent's config file.
func (d *demoDef) configTOML() ([]byte, error) {
	provider := map[string]any{"model": "gpt-4o-mini"}
	if d.Model != "" {
		provider["model"] = d.Model
	}
	doc := map[string]any{"provider": provider}
	if len(d.Recovery) > 0 {
		rec, err := demoTOMLValue(d.Recovery)
		if err != nil {
			return nil, fmt.Errorf("demo definition: recovery: %w", err)
		}
		doc["recovery"] = rec
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return nil, fmt.Errorf("demo definition: recovery: %w", err)
	}
	return b.Bytes(), nil
}

// demoTOMLValue turns decoded JSON into values the TOML encoder writes
// faithfully: integers stay integers, other numbers become floats.
func demoTOMLValue(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, err
		}
		return f, nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), nil
		}
		return v, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			y, err := demoTOMLValue(x)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := demoTOMLValue(x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case nil:
		return nil, errors.New("null has no TOML form")
	}
	return v, nil
}

// demoFastScale is what --fast multiplies every wait by.
const demoFastScale = 0.1

// scale multiplies every wait of the demo by f: Retry-After headers (sent
// as retry-after-ms, which Rebound reads first), the mock's delays, the
// recovery durations and cancel_after.
func (d *demoDef) scale(f float64) {
	for i := range d.Scenes {
		sc := &d.Scenes[i]
		for j := range sc.Steps {
			demoScaleStep(&sc.Steps[j], f)
		}
		sc.cancelAfter = demoScaleDur(sc.cancelAfter, f)
	}
	if d.Fallback != nil {
		demoScaleStep(d.Fallback, f)
	}
	d.Recovery = demoScaleMap(d.Recovery, f)
}

func demoScaleDur(d time.Duration, f float64) time.Duration {
	return time.Duration(math.Round(float64(d) * f))
}

func demoScaleStep(st *mockprovider.Step, f float64) {
	for _, p := range []*string{&st.Delay, &st.ChunkDelay} {
		if dur, err := time.ParseDuration(*p); err == nil && *p != "" {
			*p = demoScaleDur(dur, f).String()
		}
	}
	if len(st.Headers) == 0 {
		return
	}
	h := maps.Clone(st.Headers)
	for k, v := range st.Headers {
		switch strings.ToLower(k) {
		case "retry-after-ms":
			if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				h[k] = strconv.FormatInt(int64(math.Round(ms*f)), 10)
			}
		case "retry-after":
			// Seconds only; an HTTP date is left as it is.
			if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				delete(h, k)
				h["retry-after-ms"] = strconv.FormatInt(int64(math.Round(float64(secs)*1000*f)), 10)
			}
		}
	}
	st.Headers = h
}

// demoScaleMap scales every string that parses as a Go duration.
func demoScaleMap(m map[string]any, f float64) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			if dur, err := time.ParseDuration(v); err == nil && dur > 0 {
				out[k] = demoScaleDur(dur, f).String()
				continue
			}
			out[k] = v
		case map[string]any:
			out[k] = demoScaleMap(v, f)
		case []any: // [[recovery.rules]]
			list := make([]any, len(v))
			for i, x := range v {
				if t, ok := x.(map[string]any); ok {
					x = demoScaleMap(t, f)
				}
				list[i] = x
			}
			out[k] = list
		default:
			out[k] = v
		}
	}
	return out
}
