package demo

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

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// defaultJSON is the conversation `rebound demo` plays without --script.
//
//go:embed default.json
var defaultJSON []byte

// DefaultDefinition is the built-in demo definition, as
// `rebound demo --print-default` prints it.
func DefaultDefinition() []byte { return bytes.Clone(defaultJSON) }

// definition is a demo definition: the agent's config and the scenes to play.
type definition struct {
	// Model is provider.model of the agent; default gpt-4o-mini.
	Model string `json:"model,omitempty"`
	// Recovery is written as the agent's [recovery] table: keys as in the
	// README, nested objects become sub-tables ([recovery.truncation]).
	Recovery map[string]any `json:"recovery,omitempty"`
	// Project is the files of the project directory the session works in
	// (path → content): a new temporary directory, removed at the end.
	Project map[string]string `json:"project,omitempty"`
	Scenes  []scene           `json:"scenes"`
	// Fallback answers every request after all scenes' steps are used.
	Fallback *mockprovider.Step `json:"fallback,omitempty"`

	// plain: made from a bare mock script; prompts are sent one at a time
	// until its steps are used up, with no expectations.
	plain bool
}

// scene is one prompt and the mock steps that answer its requests.
type scene struct {
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

var expectations = []string{"end_turn", "cancelled", "max_tokens", "max_turn_requests", "refusal", "error"}

// parseFile reads --script: a demo definition (it has "scenes") or a
// plain mock script.
func parseFile(data []byte) (*definition, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := top["scenes"]; ok {
		return parseDefinition(data)
	}
	script, err := mockprovider.ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("neither a demo definition (no \"scenes\") nor a valid %w", err)
	}
	return fromScript(script), nil
}

// fromScript plays a bare mock script: one prompt at a time until every
// step has answered a request (at least one prompt).
func fromScript(s *mockprovider.Script) *definition {
	d := &definition{Fallback: s.Fallback, plain: true}
	d.inheritDefault()
	if len(s.Steps) > 0 {
		d.Scenes = []scene{{Steps: s.Steps}}
	}
	return d
}

// parseDefinition reads a demo definition, fills in its defaults and checks
// it whole, so that a bad script is refused before any agent starts.
func parseDefinition(data []byte) (*definition, error) {
	d, err := decodeDefinition(data)
	if err != nil {
		return nil, err
	}
	if len(d.Scenes) == 0 {
		return nil, errors.New("demo definition: scenes: at least one scene is needed")
	}
	if err := checkProject(d.Project); err != nil {
		return nil, err
	}
	d.inheritDefault()
	for i := range d.Scenes {
		if err := d.Scenes[i].check(i); err != nil {
			return nil, err
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
	return d, nil
}

// decodeDefinition decodes exactly one JSON object with no unknown fields,
// keeping numbers as written.
func decodeDefinition(data []byte) (*definition, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var d definition
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("demo definition: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("demo definition: unexpected data after the object")
	}
	return &d, nil
}

// checkProject refuses a project file name that would land outside the
// project directory (or is written with Windows separators).
func checkProject(project map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(project)) {
		if !filepath.IsLocal(name) || strings.Contains(name, `\`) {
			return fmt.Errorf("demo definition: project: %q is not a relative path inside the project (like \"README.md\" or \"cmd/main.go\")", name)
		}
	}
	return nil
}

// check validates scene i and fills in its title and cancelAfter.
func (sc *scene) check(i int) error {
	where := fmt.Sprintf("demo definition: scenes[%d]", i)
	if strings.TrimSpace(sc.Prompt) == "" {
		return fmt.Errorf("%s: prompt: missing", where)
	}
	if sc.Title == "" {
		sc.Title = fmt.Sprintf("Scene %d", i+1)
	}
	if err := (&mockprovider.Script{Steps: sc.Steps}).Validate(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if sc.CancelAfter != "" {
		dur, err := time.ParseDuration(sc.CancelAfter)
		if err != nil || dur < 0 {
			return fmt.Errorf("%s: cancel_after: %q is not a non-negative duration like \"1.5s\"", where, sc.CancelAfter)
		}
		sc.cancelAfter = dur
	}
	if sc.Expect != "" && !slices.Contains(expectations, sc.Expect) {
		return fmt.Errorf("%s: expect: %q is not one of %s", where, sc.Expect, strings.Join(expectations, ", "))
	}
	return nil
}

// inheritDefault gives a definition without "model", "recovery" or
// "project" (and a plain mock script) the built-in demo's: quick,
// unjittered waits that --fast can scale, and the small project the
// built-in scenes read. "recovery": {} asks for the agent's own defaults,
// "project": {} for an empty directory.
func (d *definition) inheritDefault() {
	if d.Model != "" && d.Recovery != nil && d.Project != nil {
		return
	}
	var base struct {
		Model    string            `json:"model"`
		Recovery map[string]any    `json:"recovery"`
		Project  map[string]string `json:"project"`
	}
	dec := json.NewDecoder(bytes.NewReader(defaultJSON))
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
func (d *definition) writeProject(dir string) error {
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
func (d *definition) script() *mockprovider.Script {
	s := &mockprovider.Script{Fallback: d.Fallback}
	for _, sc := range d.Scenes {
		s.Steps = append(s.Steps, sc.Steps...)
	}
	return s
}

// configTOML is the agent's config file.
func (d *definition) configTOML() ([]byte, error) {
	provider := map[string]any{"model": "gpt-4o-mini"}
	if d.Model != "" {
		provider["model"] = d.Model
	}
	doc := map[string]any{"provider": provider}
	if len(d.Recovery) > 0 {
		rec, err := tomlValue(d.Recovery)
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

// tomlValue turns decoded JSON into values the TOML encoder writes
// faithfully: integers stay integers, other numbers become floats.
func tomlValue(v any) (any, error) {
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
		return tomlTable(v)
	case []any:
		return tomlArray(v)
	case nil:
		return nil, errors.New("null has no TOML form")
	}
	return v, nil
}

// tomlTable is tomlValue of each value of m; an error names its key.
func tomlTable(m map[string]any) (any, error) {
	out := make(map[string]any, len(m))
	for k, x := range m {
		y, err := tomlValue(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = y
	}
	return out, nil
}

// tomlArray is tomlValue of each element of list.
func tomlArray(list []any) (any, error) {
	out := make([]any, len(list))
	for i, x := range list {
		y, err := tomlValue(x)
		if err != nil {
			return nil, err
		}
		out[i] = y
	}
	return out, nil
}

// fastScale is what --fast multiplies every wait by.
const fastScale = 0.1

// scale multiplies every wait of the demo by f: Retry-After headers (sent
// as retry-after-ms, which Rebound reads first), the mock's delays, the
// recovery durations and cancel_after.
func (d *definition) scale(f float64) {
	for i := range d.Scenes {
		sc := &d.Scenes[i]
		for j := range sc.Steps {
			scaleStep(&sc.Steps[j], f)
		}
		sc.cancelAfter = scaleDur(sc.cancelAfter, f)
	}
	if d.Fallback != nil {
		scaleStep(d.Fallback, f)
	}
	d.Recovery = scaleMap(d.Recovery, f)
}

func scaleDur(d time.Duration, f float64) time.Duration {
	return time.Duration(math.Round(float64(d) * f))
}

func scaleStep(st *mockprovider.Step, f float64) {
	for _, p := range []*string{&st.Delay, &st.ChunkDelay} {
		if dur, err := time.ParseDuration(*p); err == nil && *p != "" {
			*p = scaleDur(dur, f).String()
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

// scaleMap scales every string that parses as a Go duration.
func scaleMap(m map[string]any, f float64) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			if dur, err := time.ParseDuration(v); err == nil && dur > 0 {
				out[k] = scaleDur(dur, f).String()
				continue
			}
			out[k] = v
		case map[string]any:
			out[k] = scaleMap(v, f)
		case []any: // [[recovery.rules]]
			list := make([]any, len(v))
			for i, x := range v {
				if t, ok := x.(map[string]any); ok {
					x = scaleMap(t, f)
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
