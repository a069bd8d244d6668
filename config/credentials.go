package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// The credentials file holds the API keys `rebound login` stores, one line
// per key, under the name of the environment variable the key stands in for
// (provider.api_key_env), like a dotenv file:
//
//	OPENAI_API_KEY=sk-...
//
// A key is looked up only when that variable is unset or empty, so the
// environment always wins. Keeping keys by variable name means a key stored
// for one provider is never sent to another one configured with its own
// api_key_env.
//
// The file is private: written 0600 (in a 0700 directory when Rebound
// creates it), and refused, like ssh refuses a private key, when others may
// read it. Neither a key nor a line of the file ever appears in an error.

const (
	credentialsName = "credentials"
	// maxCredentialsBytes bounds the read: the file holds a few keys.
	maxCredentialsBytes = 64 << 10
	// MaxAPIKeyBytes is the longest key accepted.
	MaxAPIKeyBytes = 4096
)

// CredentialsPath is where `rebound login` keeps API keys, next to the
// default config file: $XDG_CONFIG_HOME/rebound/credentials when
// $XDG_CONFIG_HOME is absolute, else ~/.config/rebound/credentials; "" when
// neither is known. getenv and home are as for Load.
func CredentialsPath(getenv func(string) string, home string) string {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "rebound", credentialsName)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "rebound", credentialsName)
}

// APIKey finds the API key for the variable name: its value in the
// environment when set, else the credentials file's entry for it (see
// CredentialsPath); "" when neither has one. An unusable credentials file
// (readable by others, malformed, too large) is an error naming the file and
// the fix. Load uses it at start-up, and a running agent asks it again when
// a key may have appeared since (`rebound login` run meanwhile).
func APIKey(name string, getenv func(string) string, home string) (string, error) {
	if getenv != nil {
		if v := getenv(name); v != "" {
			return v, nil
		}
	}
	path := CredentialsPath(getenv, home)
	if path == "" {
		return "", nil
	}
	return ReadAPIKey(path, name)
}

// ReadAPIKey returns the key stored under name in the credentials file at
// path, "" when the file or the entry does not exist.
func ReadAPIKey(path, name string) (string, error) {
	keys, err := readCredentials(path, true)
	if err != nil || keys == nil {
		return "", err
	}
	return keys[name], nil
}

// StoreAPIKey stores key under name in the credentials file at path, keeping
// the other entries, and returns nothing of the key in any error. The file
// is replaced atomically (a temporary file in the same directory, made 0600
// before the key is written, synced, then renamed over it), so a crash
// leaves either the old file or the new one; the directory is created 0700
// when missing. An existing file that others can read is rewritten 0600,
// which is how `rebound login` repairs it.
func StoreAPIKey(path, name, key string) error {
	if !envName.MatchString(name) {
		return fmt.Errorf("cannot store an API key under %q: not an environment variable name", name)
	}
	if err := CheckAPIKey(key); err != nil {
		return err
	}
	keys, err := readCredentials(path, false)
	if err != nil {
		return err
	}
	if keys == nil {
		keys = map[string]string{}
	}
	keys[name] = key
	return writeCredentials(path, keys)
}

// RemoveAPIKey removes the entry for name from the credentials file at path,
// and the file once it holds no key. It reports whether there was an entry.
func RemoveAPIKey(path, name string) (bool, error) {
	keys, err := readCredentials(path, false)
	if err != nil || keys[name] == "" {
		return false, err
	}
	delete(keys, name)
	if len(keys) == 0 {
		if err := os.Remove(path); err != nil {
			return false, err
		}
		return true, nil
	}
	return true, writeCredentials(path, keys)
}

// CheckAPIKey says what is wrong with key, which must already be trimmed of
// surrounding white space, without quoting it.
func CheckAPIKey(key string) error {
	switch {
	case key == "":
		return errors.New("no API key given")
	case len(key) > MaxAPIKeyBytes:
		return fmt.Errorf("that is longer than the %d bytes an API key can be; was something else pasted?", MaxAPIKeyBytes)
	case strings.ContainsFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar }):
		return errors.New("an API key is one line of text without spaces or control characters; give the key alone")
	}
	return nil
}

// CredentialsError is an unusable credentials file: its path and what is
// wrong, with the fix.
type CredentialsError struct {
	Path    string
	Problem string
}

func (e *CredentialsError) Error() string { return e.Path + ": " + e.Problem }

// readCredentials parses the file at path: nil, nil when it does not exist.
// private refuses a file that others may read or write.
//
// Only a regular file is read (regfile.Open): opening a FIFO blocks until
// something writes to it, which would hang `initialize` and `rebound
// login`. A symlink to the file, as dotfile managers make, is fine.
func readCredentials(path string, private bool) (map[string]string, error) {
	f, err := regfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, &CredentialsError{Path: path, Problem: "not a regular file; remove it and run `rebound login` again"}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// On Windows the mode bits say nothing about who may read a file (its
	// ACL does, and the profile directory is private by default).
	if perm := info.Mode().Perm(); private && perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, &CredentialsError{Path: path, Problem: fmt.Sprintf(
			"permissions %04o are too open: the file holds API keys, so only you may read it; the keys in it are not used until you run `chmod 600 %s` (or `rebound login`, which writes it again)",
			perm, shellQuote(path))}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialsBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCredentialsBytes {
		return nil, &CredentialsError{Path: path, Problem: fmt.Sprintf("larger than %d KiB, which no file of API keys is; remove it and run `rebound login` again", maxCredentialsBytes>>10)}
	}
	return parseCredentials(path, data)
}

// parseCredentials reads NAME=KEY lines; blank lines and lines starting with
// # are skipped. A bad line is reported by number, never quoted: it may hold
// a key.
func parseCredentials(path string, data []byte) (map[string]string, error) {
	keys := map[string]string{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		bad := func(problem string) error {
			return &CredentialsError{Path: path, Problem: "line " + strconv.Itoa(i+1) + ": " + problem + "; fix the line or remove it, then run `rebound login` again"}
		}
		name, key, ok := strings.Cut(s, "=")
		name, key = strings.TrimSpace(name), strings.TrimSpace(key)
		switch {
		case !ok || !envName.MatchString(name):
			return nil, bad("not NAME=KEY, where NAME is the environment variable the key stands in for")
		case CheckAPIKey(key) != nil:
			return nil, bad("the key after " + name + "= is empty or not one word")
		case keys[name] != "":
			return nil, bad(name + " is given twice")
		}
		keys[name] = key
	}
	return keys, nil
}

const credentialsHeader = "# API keys stored by `rebound login`, by the environment variable each stands in for.\n" +
	"# A variable set in the environment takes precedence. Keep this file private (chmod 600).\n"

// writeCredentials replaces the file at path with keys, atomically.
func writeCredentials(path string, keys map[string]string) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+credentialsName+"-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600 already; saying so again does not
	// depend on that, and happens before any key is written.
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		return err
	}
	var b strings.Builder
	b.WriteString(credentialsHeader)
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		b.WriteString(name + "=" + keys[name] + "\n")
	}
	if _, err := io.WriteString(tmp, b.String()); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable; not every platform can sync a
	// directory, and the file is complete either way.
	if d, err := regfile.OpenDir(dir); err == nil { // never blocking on a FIFO swapped in
		d.Sync()
		d.Close()
	}
	return nil
}

// shellQuote quotes p for a command the user may paste, when it needs it.
func shellQuote(p string) string {
	if p != "" && !strings.ContainsFunc(p, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}) {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
