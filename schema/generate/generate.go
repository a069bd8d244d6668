// Package generate makes Rebound's JSON Schemas from its Go types with
// invopop/jsonschema: the config file, the session log's events, the retry
// progress payload and the mock provider's script. The output is checked in
// under schema/ (so editors and tools can use it without Go, and the binary
// embeds it without carrying the generator); schema's tests keep it fresh.
package generate

import (
	"encoding/json"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

const idBase = "https://github.com/rebound-agent/rebound/schema/"

// All returns every schema by the file name it is checked in under.
func All() map[string]*jsonschema.Schema {
	return map[string]*jsonschema.Schema{
		"config.schema.json":         Config(),
		"session-event.schema.json":  SessionEvent(),
		"mock-script.schema.json":    MockScript(),
		"retry-progress.schema.json": RetryProgress(),
	}
}

// reflector is pinned so the output, $id included, does not depend on the
// package path or the order of reflection.
func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		DoNotReference: true,
		// Every key of the config file and the script is optional; only
		// fields tagged required are.
		RequiredFromJSONSchemaTags: true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == reflect.TypeFor[config.Duration]() {
				return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$`,
					Description: `A Go duration such as "500ms", "10s" or "1m30s".`}
			}
			return nil
		},
	}
}

// Config describes config.toml (taplo and other TOML tools read JSON Schema).
func Config() *jsonschema.Schema {
	s := reflector().Reflect(&config.Config{})
	s.ID = idBase + "config.schema.json"
	s.Title = "Rebound configuration (config.toml)"
	return s
}

// MockScript describes the fault script of the mock provider.
func MockScript() *jsonschema.Schema {
	s := reflector().Reflect(&mockprovider.Script{})
	s.ID = idBase + "mock-script.schema.json"
	s.Title = "Rebound mock provider script"
	return s
}

// RetryProgress describes `_meta["rebound/retry"]` on the session_info_update
// and notice updates Rebound sends while it recovers.
func RetryProgress() *jsonschema.Schema {
	r := reflector()
	r.RequiredFromJSONSchemaTags = false // omitempty marks what may be absent
	s := r.Reflect(&recovery.RetryProgress{})
	s.ID = idBase + "retry-progress.schema.json"
	s.Title = `Rebound retry progress (_meta["rebound/retry"])`
	return s
}

// eventData maps each session log event type to the Go type of its data.
var eventData = []struct {
	typ  string
	data any
}{
	{session.TypeSessionStart, session.SessionStart{}},
	{session.TypeTurnStart, session.TurnStart{}},
	{session.TypeStepStart, session.StepStart{}},
	{session.TypeAssistantChunk, session.AssistantChunk{}},
	{session.TypeAssistantMessage, session.AssistantMessage{}},
	{session.TypeStepEnd, session.StepEnd{}},
	{session.TypeToolCall, session.ToolCall{}},
	{session.TypeToolResult, session.ToolResult{}},
	{session.TypeLLMRetry, session.LLMRetry{}},
	{session.TypeLLMRetryStarted, session.LLMRetryStarted{}},
	{session.TypeCompaction, session.Compaction{}},
	{session.TypePermission, session.Permission{}},
	{session.TypeMode, session.Mode{}},
	{session.TypeConfig, session.Config{}},
	{session.TypeTurnEnd, session.TurnEnd{}},
	{session.TypePlan, session.Plan{}},
	{session.TypeStatus, session.Status{}},
}

// SessionEvent describes one line of a session log: the envelope, with the
// data's shape selected by the type.
func SessionEvent() *jsonschema.Schema {
	r := reflector()
	r.RequiredFromJSONSchemaTags = false // every envelope field is written
	s := r.Reflect(&session.Event{})
	s.ID = idBase + "session-event.schema.json"
	s.Title = "Rebound session log event (one JSONL line)"
	for _, e := range eventData {
		data := r.Reflect(e.data)
		data.Version, data.ID = "", ""
		typ := jsonschema.NewProperties()
		typ.Set("type", &jsonschema.Schema{Const: e.typ})
		dataProp := jsonschema.NewProperties()
		dataProp.Set("data", data)
		s.OneOf = append(s.OneOf, &jsonschema.Schema{
			If:   &jsonschema.Schema{Properties: typ},
			Then: &jsonschema.Schema{Properties: dataProp},
			Else: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		})
	}
	return s
}

// Marshal renders a schema the way it is checked in.
func Marshal(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
