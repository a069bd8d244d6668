package tools

import (
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"

	"github.com/rebound-agent/rebound/llm"
)

// generateDefinitions makes the tool definitions from the argument types:
// the content definitions.json must have.
func generateDefinitions() ([]byte, error) {
	r := &jsonschema.Reflector{
		DoNotReference: true, // one self-contained object per tool
		ExpandedStruct: true,
		Anonymous:      true, // no $id
	}
	defs := make([]llm.ToolDef, 0, len(all))
	for _, t := range all {
		s := r.Reflect(t.args)
		s.Version = "" // no $schema: providers want a bare object schema
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t.name, err)
		}
		defs = append(defs, llm.ToolDef{Name: t.name, Description: t.description, Parameters: b})
	}
	out, err := json.MarshalIndent(defs, "", "  ")
	return append(out, '\n'), err
}

// GenerateDefinitions is generateDefinitions for the black-box tests.
var GenerateDefinitions = generateDefinitions

// SetRaceHooks makes the tree-changing moments of a test: afterResolve runs
// once a path is resolved, before the workspace root is opened; afterCheck
// once a file's type is checked, before it is opened. Nil leaves a hook as
// it is. The hooks are restored when the test ends.
func SetRaceHooks(t interface{ Cleanup(func()) }, resolved func(), checked func(name string)) {
	oldR, oldC := afterResolve, afterCheck
	t.Cleanup(func() { afterResolve, afterCheck = oldR, oldC })
	if resolved != nil {
		afterResolve = resolved
	}
	if checked != nil {
		afterCheck = checked
	}
}
