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

// modelHints says, at a give-up, what a person needs when the provider has
// no model of the name asked for: where the name was set, and the names
// the provider lists that are closest to it. It knows the configuration
// and the provider's list only through its fields, so a test gives it
// fakes.
type modelHints struct {
	configured string // the configured model (Config.Model)
	from       string // where it was set (Config.ModelFrom); "" names every place
	// models is the list the model picker offers; a request in flight is
	// waited for, within its own timeout (ModelListTimeout).
	models func(context.Context) ([]string, bool)
}

// hint is what a give-up with f adds when the provider has no model named
// model (recovery.Failure.ModelNotFound); fellBack says the turn switched
// to the fallback model. "" otherwise.
func (h modelHints) hint(ctx context.Context, f *recovery.Failure, model string, fellBack bool) string {
	if model == "" || !f.ModelNotFound(model) {
		return ""
	}
	var from string
	switch {
	case fellBack:
		from = "recovery.fallback_model in the config file (the model Rebound switched to when the provider was overloaded)"
	case model != h.configured:
		from = "the session's model option, chosen in the editor"
	default:
		from = cmp.Or(h.from, "the configuration (provider.model, "+"REBOUND_MODEL or --model)")
	}
	hint := fmt.Sprintf("The model %q comes from %s.", clipBytes(model, 100), from)
	list, _ := h.models(ctx)
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
