package tools

import (
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"

	"github.com/rebound-agent/rebound/agent/tools/shell"
	"github.com/rebound-agent/rebound/llm"
)

// generateDefinitions makes the tool definitions from the argument types,
// run_command described for goos's interpreter: the content
// DefinitionsFile(goos) must have.
func generateDefinitions(goos string) ([]byte, error) {
	r := &jsonschema.Reflector{
		DoNotReference: true, // one self-contained object per tool
		ExpandedStruct: true,
		Anonymous:      true, // no $id
	}
	defs := make([]llm.ToolDef, 0, len(all))
	for _, t := range all {
		s := r.Reflect(t.args)
		s.Version = "" // no $schema: providers want a bare object schema
		description := t.description
		if t.name == RunCommand {
			var command string
			description, command = runCommandDescriptions(shell.InterpFor(goos, ""))
			p, ok := s.Properties.Get("command")
			if !ok {
				return nil, fmt.Errorf("schema of %s: no command property", t.name)
			}
			p.Description = command
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t.name, err)
		}
		defs = append(defs, llm.ToolDef{Name: t.name, Description: description, Parameters: b})
	}
	out, err := json.MarshalIndent(defs, "", "  ")
	return append(out, '\n'), err
}

// DefinitionsFor is definitionsFor for the black-box tests.
var DefinitionsFor = definitionsFor

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
