package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	clip "github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/recovery"
)

// How many of the provider's model names a missing model's message offers,
// and how many bytes of a name the likeness reads (names are at most 200;
// the list at most llm.MaxModels).
const (
	maxModelSuggestions = 3
	maxLikenessBytes    = 64
)

// modelHint is what a give-up adds when the provider has no model of the
// name asked for (recovery.Failure.ModelNotFound): where the name was set,
// and the names the provider lists that are closest to it. "" otherwise.
func (t *turn) modelHint(ctx context.Context, f *recovery.Failure) string {
	model := t.req.model
	if model == "" || !f.ModelNotFound(model) {
		return ""
	}
	var from string
	switch {
	case t.req.fellBack:
		from = "recovery.fallback_model in the config file (the model Rebound switched to when the provider was overloaded)"
	case model != t.agent.cfg.Model:
		from = "the session's model option, chosen in the editor"
	default:
		from = cmp.Or(t.agent.cfg.ModelFrom, "the configuration (provider.model, "+"REBOUND_MODEL or --model)")
	}
	hint := fmt.Sprintf("The model %q comes from %s.", clipBytes(model, 100), from)
	// The list the model picker offers; a request in flight is waited for,
	// within its own timeout (ModelListTimeout).
	list, _ := t.agent.catalog.providerModels(ctx)
	if len(list) == 0 {
		return hint
	}
	names := closestModels(model, list, maxModelSuggestions)
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf("%s The provider lists %d models; the closest: %s.", hint, len(list), strings.Join(quoted, ", "))
}

// closestModels are the n names of list most like want (by edit distance,
// ignoring case; ties by name), want itself left out.
func closestModels(want string, list []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	w := clip.Prefix(strings.ToLower(want), maxLikenessBytes)
	all := make([]scored, 0, len(list))
	for _, name := range list {
		if name == want {
			continue
		}
		all = append(all, scored{name, clip.EditDistance(w, clip.Prefix(strings.ToLower(name), maxLikenessBytes))})
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(a.name, b.name)) })
	out := make([]string, 0, n)
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.name)
	}
	return out
}
