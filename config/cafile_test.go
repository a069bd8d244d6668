package config_test

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/config"
)

// testCA is a PEM certificate: httptest's own.
func testCA(t *testing.T) string {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	srv.Close()
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// provider.ca_file and REBOUND_CA_FILE: read at start-up; a bad file,
// a relative path or ca_only without a file stop it naming the key and
// where it was set.
func TestLoad_CAFile(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "ca.pem", testCA(t))
	bad := writeFile(t, dir, "bad.pem", "not a certificate\n")
	for _, tt := range []struct {
		name  string
		file  string // config file content, "" for none
		env   env
		want  string // CAFile, or parts of the error
		parts []string
	}{
		{"from the file", "[provider]\nca_file = '" + good + "'\n", env{}, good, nil},
		{"the variable wins", "[provider]\nca_file = '" + bad + "'\n", env{"REBOUND_CA_FILE": good}, good, nil},
		{"no PEM in the file", "[provider]\nca_file = '" + bad + "'\n", env{}, "", []string{"config.toml: provider.ca_file:", bad, "no PEM certificate"}},
		{"no PEM from the variable", "", env{"REBOUND_CA_FILE": bad}, "", []string{"REBOUND_CA_FILE: provider.ca_file:", "no PEM certificate"}},
		{"missing", "", env{"REBOUND_CA_FILE": filepath.Join(dir, "nope.pem")}, "", []string{"REBOUND_CA_FILE: provider.ca_file:", "nope.pem"}},
		{"relative", "[provider]\nca_file = 'ca.pem'\n", env{}, "", []string{"provider.ca_file: must be an absolute path"}},
		{"ca_only alone", "[provider]\nca_only = true\n", env{}, "", []string{"provider.ca_only: needs provider.ca_file"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			tt.env["REBOUND_STATE_DIR"] = t.TempDir()
			if tt.file != "" {
				tt.env["REBOUND_CONFIG"] = writeFile(t, home, "config.toml", tt.file)
			}
			cfg, err := config.Load(config.Flags{}, tt.env.get, home)
			if tt.parts == nil {
				if err != nil || cfg.Provider.CAFile != tt.want {
					t.Fatalf("Load() = %q, %v; want CAFile %q", cfg.Provider.CAFile, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatal("Load() = nil error")
			}
			for _, p := range tt.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not contain %q", err, p)
				}
			}
		})
	}
}
