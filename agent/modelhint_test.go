package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
	clip "github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// missingModel is a provider that has no model of any name asked for, and
// lists models.
type missingModel struct {
	models []string
}

func (p *missingModel) Stream(_ context.Context, req llm.Request) (llm.Stream, error) {
	return nil, &llm.Error{Status: 404, Code: "model_not_found", Type: "invalid_request_error",
		Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model)}
}

func (p *missingModel) ListModels(context.Context) ([]string, error) { return p.models, nil }

// TestModelHint_SaysWhereAndWhatIsListed: a turn whose model the provider
// does not have fails with a message that says where the name was set and
// the closest names the provider lists, a few of them.
func TestModelHint_SaysWhereAndWhatIsListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &missingModel{models: []string{"gpt-4o", "o3", "mm", "m2", "text-embedding-3-small", "whisper-1"}}
		a := testAgent(t, Config{Provider: p, ModelFrom: "provider.model in /home/u/.config/rebound/config.toml"})
		id := newSession(t, a)
		_, err := ask(t.Context(), a, id, "hi")
		var re *acp.RequestError
		if !errors.As(err, &re) {
			t.Fatalf("the turn: %v, want its failure", err)
		}
		for _, want := range []string{
			`The model "m" comes from provider.model in /home/u/.config/rebound/config.toml.`,
			`The provider lists 6 models; the closest: "m2", "mm", "o3".`,
		} {
			if !strings.Contains(re.Message, want) {
				t.Errorf("failure message %q\ndoes not say %q", re.Message, want)
			}
		}

		// A model chosen in the editor is said to be the session's.
		if _, err := a.SetSessionConfigOption(t.Context(), acp.SetSessionConfigOptionRequest{SessionID: id, ConfigID: ModelConfigID,
			Value: json.RawMessage(`"gpt-4o"`)}, &editor{}); err != nil {
			t.Fatal(err)
		}
		_, err = ask(t.Context(), a, id, "hi")
		if !errors.As(err, &re) || !strings.Contains(re.Message, `The model "gpt-4o" comes from the session's model option, chosen in the editor.`) {
			t.Errorf("with the model chosen in the editor: %v", err)
		}
	})
}

// TestClosestModels_Property: the names offered are at most n, from the
// list, never the name asked for, and none left out is closer than one
// offered; a name one edit away from the asked one is always offered
// first.
func TestClosestModels_Property(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 10))
	word := func() string {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = "abcgpt-4o.:/"[r.IntN(12)]
		}
		return string(b)
	}
	for range 500 {
		want := word()
		list := []string{want}
		for range r.IntN(20) {
			list = append(list, word())
		}
		near := want + "x"
		if r.IntN(2) == 0 {
			list = append(list, near)
		}
		slices.Sort(list)
		list = slices.Compact(list)
		n := 1 + r.IntN(4)
		got := closestModels(want, list, n)
		if len(got) > n || slices.Contains(got, want) {
			t.Fatalf("closestModels(%q, %q, %d) = %q", want, list, n, got)
		}
		worst := 0
		for _, g := range got {
			if !slices.Contains(list, g) {
				t.Fatalf("%q is not in the list", g)
			}
			worst = max(worst, clip.EditDistance(want, g))
		}
		for _, m := range list {
			if m != want && !slices.Contains(got, m) && len(got) < n {
				t.Fatalf("closestModels(%q, %q, %d) = %q left %q out with room", want, list, n, got, m)
			}
			if m != want && !slices.Contains(got, m) && clip.EditDistance(want, m) < worst {
				t.Fatalf("closestModels(%q, %q, %d) = %q left out the closer %q", want, list, n, got, m)
			}
		}
		if slices.Contains(list, near) && near != want && clip.EditDistance(want, near) == 1 {
			if got[0] != near && clip.EditDistance(want, got[0]) > 1 {
				t.Fatalf("closestModels(%q, …) = %q, want %q first", want, got, near)
			}
		}
	}
	if got := closestModels("gpt-5o", []string{"gpt-4o", "gpt-5", "o3", "claude-sonnet-4"}, 2); !slices.Equal(got, []string{"gpt-4o", "gpt-5"}) {
		t.Errorf("closestModels(gpt-5o) = %q, want gpt-4o and gpt-5 (one edit each; by name)", got)
	}
}

// TestModelHints: the hint alone, with a fake list: where the name was set
// (the fallback, the editor's choice, the configuration and where it was
// written), the closest listed names, and nothing for another failure.
func TestModelHints(t *testing.T) {
	notFound := func(model string) *recovery.Failure {
		return recovery.Classify(&llm.Error{Status: 404, Code: "model_not_found", Message: fmt.Sprintf("The model `%s` does not exist.", model)})
	}
	list := []string{"gpt-4o", "gpt-4o-mini", "o3"}
	h := modelHints{configured: "gpt-4", from: "provider.model in config.toml",
		models: func(context.Context) ([]string, bool) { return list, true }}
	tests := []struct {
		name, model string
		fellBack    bool
		f           *recovery.Failure
		want        string
	}{
		{"configured", "gpt-4", false, notFound("gpt-4"),
			`The model "gpt-4" comes from provider.model in config.toml. The provider lists 3 models; the closest: "gpt-4o", "o3", "gpt-4o-mini".`},
		{"chosen in the editor", "gpt-5", false, notFound("gpt-5"), `The model "gpt-5" comes from the session's model option, chosen in the editor.`},
		{"the fallback", "gpt-4", true, notFound("gpt-4"), `The model "gpt-4" comes from recovery.fallback_model in the config file`},
		{"another failure", "gpt-4", false, &recovery.Failure{Code: recovery.Server, Status: 500}, ""},
	}
	for _, tt := range tests {
		got := h.hint(t.Context(), tt.f, tt.model, tt.fellBack)
		if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: hint = %q, want %q", tt.name, got, tt.want)
		}
	}
	// No list: where the name was set, nothing more; no "from": every place.
	h = modelHints{configured: "gpt-4", models: func(context.Context) ([]string, bool) { return nil, false }}
	if got := h.hint(t.Context(), notFound("gpt-4"), "gpt-4", false); got != `The model "gpt-4" comes from the configuration (provider.model, REBOUND_MODEL or --model).` {
		t.Errorf("without a list: %q", got)
	}
}
