package config_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/config"
)

func TestCredentialsPath(t *testing.T) {
	tests := []struct {
		name string
		env  env
		home string
		want string
	}{
		{"XDG_CONFIG_HOME", env{"XDG_CONFIG_HOME": "/xdg"}, "/home/u", "/xdg/rebound/credentials"},
		{"relative XDG_CONFIG_HOME is ignored", env{"XDG_CONFIG_HOME": "xdg"}, "/home/u", "/home/u/.config/rebound/credentials"},
		{"home", env{}, "/home/u", "/home/u/.config/rebound/credentials"},
		{"neither", env{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := config.CredentialsPath(tt.env.get, tt.home); got != filepath.FromSlash(tt.want) {
				t.Errorf("CredentialsPath() = %q, want %q", got, tt.want)
			}
		})
	}
}

// mode is the permission bits of path.
func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func TestStoreAPIKey_PrivateFileInPrivateDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "rebound", "credentials")
	if err := config.StoreAPIKey(path, "OPENAI_API_KEY", "sk-one"); err != nil {
		t.Fatalf("StoreAPIKey() = %v", err)
	}
	if runtime.GOOS != "windows" {
		if m := mode(t, path); m != 0o600 {
			t.Errorf("file mode = %04o, want 0600", m)
		}
		if m := mode(t, filepath.Dir(path)); m != 0o700 {
			t.Errorf("directory mode = %04o, want 0700", m)
		}
	}
	got, err := config.ReadAPIKey(path, "OPENAI_API_KEY")
	if err != nil || got != "sk-one" {
		t.Errorf("ReadAPIKey() = %q, %v; want sk-one", got, err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "\nOPENAI_API_KEY=sk-one\n") || !strings.HasPrefix(string(data), "# ") {
		t.Errorf("file content:\n%s\nwant a comment header and OPENAI_API_KEY=sk-one", data)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the credentials file (no temporary file left)", len(entries))
	}
}

// A stored key replaces the file, never rewrites it in place: a reader
// holding the old file sees it whole, and a crash leaves one or the other.
func TestStoreAPIKey_ReplacesAtomically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials")
	if err := config.StoreAPIKey(path, "OPENAI_API_KEY", "sk-old"); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := config.StoreAPIKey(path, "OPENAI_API_KEY", "sk-new"); err != nil {
		t.Fatal(err)
	}
	oldData, _ := io.ReadAll(old)
	if !strings.Contains(string(oldData), "OPENAI_API_KEY=sk-old\n") {
		t.Errorf("the file open before the store now reads:\n%s\nwant the old file, whole", oldData)
	}
	if got, _ := config.ReadAPIKey(path, "OPENAI_API_KEY"); got != "sk-new" {
		t.Errorf("ReadAPIKey() = %q, want sk-new", got)
	}
}

func TestStoreAPIKey_KeepsOtherKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials")
	for _, kv := range [][2]string{{"OPENAI_API_KEY", "sk-a"}, {"DEEPSEEK_API_KEY", "sk-b"}, {"OPENAI_API_KEY", "sk-c"}} {
		if err := config.StoreAPIKey(path, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"OPENAI_API_KEY": "sk-c", "DEEPSEEK_API_KEY": "sk-b", "OTHER_KEY": ""} {
		if got, err := config.ReadAPIKey(path, name); got != want || err != nil {
			t.Errorf("ReadAPIKey(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestReadAPIKey_RefusesFileOthersCanRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits do not say who may read a file on Windows")
	}
	path := filepath.Join(t.TempDir(), "credentials")
	if err := config.StoreAPIKey(path, "OPENAI_API_KEY", "sk-secret-value"); err != nil {
		t.Fatal(err)
	}
	for _, m := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		if err := os.Chmod(path, m); err != nil {
			t.Fatal(err)
		}
		got, err := config.ReadAPIKey(path, "OPENAI_API_KEY")
		if got != "" || err == nil {
			t.Fatalf("mode %04o: ReadAPIKey() = %q, %v; want the file refused", m, got, err)
		}
		if _, ok := errors.AsType[*config.CredentialsError](err); !ok {
			t.Errorf("error is %T, want *config.CredentialsError", err)
		}
		for _, part := range []string{path, "too open", "chmod 600 " + path} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("mode %04o: error %q does not contain %q", m, err, part)
			}
		}
		if strings.Contains(err.Error(), "sk-secret-value") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	// Storing again is the other fix: the file is written 0600.
	if err := config.StoreAPIKey(path, "OPENAI_API_KEY", "sk-secret-value"); err != nil {
		t.Fatal(err)
	}
	if got, err := config.ReadAPIKey(path, "OPENAI_API_KEY"); got != "sk-secret-value" || err != nil {
		t.Errorf("after storing again: ReadAPIKey() = %q, %v", got, err)
	}
}

func TestReadAPIKey_BadFiles(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // parts of the error
	}{
		{"no equals sign", "# comment\nsk-secret-value\n", []string{"line 2", "not NAME=KEY"}},
		{"bad name", "OPENAI API KEY=sk-secret-value\n", []string{"line 1", "not NAME=KEY"}},
		{"empty key", "OPENAI_API_KEY=\n", []string{"line 1", "empty or not one word"}},
		{"key with a space", "OPENAI_API_KEY=sk-secret value\n", []string{"line 1", "empty or not one word"}},
		{"twice", "OPENAI_API_KEY=sk-secret-value\nOPENAI_API_KEY=sk-secret-value\n", []string{"line 2", "given twice"}},
		{"too large", strings.Repeat("# padding\n", 7000), []string{"larger than 64 KiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "credentials")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := config.ReadAPIKey(path, "OPENAI_API_KEY")
			if err == nil {
				t.Fatalf("ReadAPIKey() = %q, nil; want an error", got)
			}
			for _, part := range append(tt.want, path) {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not contain %q", err, part)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error quotes the file: %v", err)
			}
		})
	}
}

func TestReadAPIKey_Missing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials")
	if got, err := config.ReadAPIKey(path, "OPENAI_API_KEY"); got != "" || err != nil {
		t.Errorf("no file: ReadAPIKey() = %q, %v; want \"\", nil", got, err)
	}
	if err := os.WriteFile(path, []byte("# nothing yet\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := config.ReadAPIKey(path, "OPENAI_API_KEY"); got != "" || err != nil {
		t.Errorf("no entry: ReadAPIKey() = %q, %v; want \"\", nil", got, err)
	}
	if err := os.Mkdir(path+".d", 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := config.ReadAPIKey(path+".d", "OPENAI_API_KEY"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: error = %v, want one saying it is not a regular file", err)
	}
}

func TestRemoveAPIKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials")
	config.StoreAPIKey(path, "OPENAI_API_KEY", "sk-a")
	config.StoreAPIKey(path, "DEEPSEEK_API_KEY", "sk-b")
	if removed, err := config.RemoveAPIKey(path, "OPENAI_API_KEY"); !removed || err != nil {
		t.Fatalf("RemoveAPIKey() = %v, %v; want true, nil", removed, err)
	}
	if got, _ := config.ReadAPIKey(path, "DEEPSEEK_API_KEY"); got != "sk-b" {
		t.Errorf("the other key is %q after the removal, want sk-b", got)
	}
	if removed, err := config.RemoveAPIKey(path, "OPENAI_API_KEY"); removed || err != nil {
		t.Errorf("removing it again = %v, %v; want false, nil", removed, err)
	}
	if removed, _ := config.RemoveAPIKey(path, "DEEPSEEK_API_KEY"); !removed {
		t.Error("the last key was not removed")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file without keys still exists: %v", err)
	}
}

func TestCheckAPIKey(t *testing.T) {
	for _, bad := range []string{"", "sk with space", "sk-a\nsk-b", "sk\x00", "sk-\xff", strings.Repeat("k", config.MaxAPIKeyBytes+1)} {
		if err := config.CheckAPIKey(bad); err == nil {
			t.Errorf("CheckAPIKey(%q) = nil, want an error", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
	for _, good := range []string{"sk-proj-abc_DEF.123", "a2V5Cg==", strings.Repeat("k", config.MaxAPIKeyBytes)} {
		if err := config.CheckAPIKey(good); err != nil {
			t.Errorf("CheckAPIKey(%q) = %v", good, err)
		}
	}
}

// The key's precedence: the environment, then the credentials file.
func TestAPIKey_Precedence(t *testing.T) {
	home := t.TempDir()
	xdg := t.TempDir()
	if err := config.StoreAPIKey(filepath.Join(home, ".config", "rebound", "credentials"), "OPENAI_API_KEY", "sk-home"); err != nil {
		t.Fatal(err)
	}
	if err := config.StoreAPIKey(filepath.Join(xdg, "rebound", "credentials"), "OPENAI_API_KEY", "sk-xdg"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  env
		want string
	}{
		{"environment wins", env{"OPENAI_API_KEY": "sk-env"}, "sk-env"},
		{"empty variable counts as unset", env{"OPENAI_API_KEY": ""}, "sk-home"},
		{"credentials under home", env{}, "sk-home"},
		{"credentials under XDG_CONFIG_HOME", env{"XDG_CONFIG_HOME": xdg}, "sk-xdg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.APIKey("OPENAI_API_KEY", tt.env.get, home)
			if got != tt.want || err != nil {
				t.Errorf("APIKey() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if got, err := config.APIKey("DEEPSEEK_API_KEY", env{}.get, home); got != "" || err != nil {
		t.Errorf("a variable with no stored key: APIKey() = %q, %v; want \"\"", got, err)
	}
}

// Load takes the stored key when the environment has none, under the name
// provider.api_key_env gives; a file it can't use leaves the key empty
// without stopping start-up (the prompt says why).
func TestLoad_Credentials(t *testing.T) {
	home := t.TempDir()
	creds := filepath.Join(home, ".config", "rebound", "credentials")
	config.StoreAPIKey(creds, "OPENAI_API_KEY", "sk-stored")
	config.StoreAPIKey(creds, "DEEPSEEK_API_KEY", "sk-deepseek")

	load := func(e env) config.Config {
		t.Helper()
		cfg, err := config.Load(config.Flags{}, e.get, home)
		if err != nil {
			t.Fatalf("Load() = %v", err)
		}
		return cfg
	}
	if got := load(env{}).Provider.APIKey; got != "sk-stored" {
		t.Errorf("no variable: APIKey = %q, want the stored sk-stored", got)
	}
	if got := load(env{"OPENAI_API_KEY": "sk-env"}).Provider.APIKey; got != "sk-env" {
		t.Errorf("variable set: APIKey = %q, want sk-env", got)
	}
	cfgFile := writeFile(t, home, "deepseek.toml", "[provider]\napi_key_env = \"DEEPSEEK_API_KEY\"\n")
	if got := load(env{"REBOUND_CONFIG": cfgFile, "OPENAI_API_KEY": "sk-env"}).Provider.APIKey; got != "sk-deepseek" {
		t.Errorf("api_key_env DEEPSEEK_API_KEY: APIKey = %q, want the key stored for it", got)
	}
	if runtime.GOOS != "windows" {
		os.Chmod(creds, 0o644)
		if got := load(env{}).Provider.APIKey; got != "" {
			t.Errorf("credentials readable by others: APIKey = %q, want it refused", got)
		}
	}
}
