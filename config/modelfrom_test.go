package config_test

import (
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/config"
)

// TestLoad_ModelFrom: Load says where the model name came from, by the
// layer that set it last: the flag, the variable, the file (named), or the
// default.
func TestLoad_ModelFrom(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "c.toml", "[provider]\nmodel = \"file-model\"\n")
	for _, tt := range []struct {
		name string
		e    env
		flag bool
		want string
	}{
		{"default", env{}, false, "the default"},
		{"file", env{"REBOUND_CONFIG": file}, false, "provider.model in " + file},
		{"env over file", env{"REBOUND_CONFIG": file, "REBOUND_MODEL": "m"}, false, "REBOUND_MODEL"},
		{"flag over env", env{"REBOUND_CONFIG": file, "REBOUND_MODEL": "m"}, true, "the --model flag"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var flags config.Flags
			if tt.flag {
				flags.Model = ptr("flag-model")
			}
			got, err := config.Load(flags, tt.e.get, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.ModelFrom, tt.want) {
				t.Errorf("ModelFrom = %q, want it to name %q", got.ModelFrom, tt.want)
			}
		})
	}
}
