package agent

import (
	"slices"
	"testing"

	"github.com/rebound-agent/rebound/internal/proc"
)

// Without Config.Secrets, commands and MCP servers still go without the
// variable that holds the API key.
func TestChildSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"default variable", Config{}, []string{"OPENAI_API_KEY"}},
		{"configured variable", Config{APIKeyEnv: "MY_KEY"}, []string{"MY_KEY"}},
		{"given", Config{APIKeyEnv: "MY_KEY", Secrets: func() proc.Secrets { return proc.Secrets{Names: []string{"OTHER"}} }}, []string{"OTHER"}},
	} {
		if got := childSecrets(&tt.cfg).Names; !slices.Equal(got, tt.want) {
			t.Errorf("%s: childSecrets().Names = %q, want %q", tt.name, got, tt.want)
		}
	}
}
