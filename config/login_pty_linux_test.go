package config_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rebound-agent/rebound/config"
)

// openPTY returns a pseudo-terminal pair, or skips the test where there is
// none.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pty number: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// shownText is what Login asked, as it asks it; wait blocks until the
// questions so far hold want.
type shownText struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newShownText() *shownText { return &shownText{changed: make(chan struct{}, 1)} }

func (s *shownText) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *shownText) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *shownText) wait(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.changed:
		case <-timeout:
			t.Fatalf("never asked %q; asked:\n%s", want, s.String())
		}
	}
}

// On a terminal, Login asks for the provider from a menu, the key with
// echo off (and gives the terminal its echo back), and a model from the
// provider's list, or by name when the list cannot be had, saying why;
// then the config file and the credentials hold them.
func TestLogin_Terminal(t *testing.T) {
	for _, tt := range []struct {
		name      string
		status    int
		typeModel string
		want      string
	}{
		{"from the list", 200, "2", "deepseek-reasoner"},
		{"list unavailable", 503, "deepseek-chat", "deepseek-chat"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			master, tty := openPTY(t)
			echoOn := func() bool {
				tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				return tio.Lflag&unix.ECHO != 0
			}
			if !echoOn() {
				t.Skip("the new terminal does not echo")
			}
			models := newModelsServer(t, tt.status, "deepseek-chat", "deepseek-reasoner", "text-embedding-x")
			home := t.TempDir()
			type result struct {
				res config.LoginResult
				err error
			}
			done := make(chan result, 1)
			shown := newShownText()
			go func() {
				res, err := config.LoginWith(t.Context(), config.Flags{}, config.LoginChoice{HTTP: models}, env{"REBOUND_STATE_DIR": home}.get, home, tty, shown)
				done <- result{res, err}
			}()
			shown.wait(t, "Provider [1-9, or Enter for 1]: ")
			master.WriteString("2\n") // DeepSeek
			shown.wait(t, "API key for DeepSeek")
			// Type the key only once echo is off, as a person would after
			// the prompt.
			deadline := time.Now().Add(10 * time.Second)
			for echoOn() {
				if time.Now().After(deadline) {
					t.Fatal("echo was never turned off")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if _, err := master.WriteString("sk-typed-key\n"); err != nil {
				t.Fatal(err)
			}
			if tt.status == 200 {
				shown.wait(t, "Model [1-2, or a name]: ")
				if strings.Contains(shown.String(), "embedding") {
					t.Errorf("a model that cannot chat was offered:\n%s", shown)
				}
			} else {
				shown.wait(t, "Could not get the provider's list of models: ")
				shown.wait(t, "503")
				shown.wait(t, "Model name: ")
			}
			master.WriteString(tt.typeModel + "\n")
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Login did not return after the model was chosen")
			}
			if r.err != nil {
				t.Fatalf("Login() = %v", r.err)
			}
			if got, _ := config.ReadAPIKey(r.res.Path, "DEEPSEEK_API_KEY"); got != "sk-typed-key" {
				t.Errorf("stored key = %q, want sk-typed-key", got)
			}
			p := readProvider(t, r.res.Config)
			if p["base_url"] != "https://api.deepseek.com/v1" || p["model"] != tt.want || p["api_key_env"] != "DEEPSEEK_API_KEY" {
				t.Errorf("config file's provider = %v", p)
			}
			if got := models.requests(); len(got) != 1 || got[0] != "GET api.deepseek.com/v1/models Bearer sk-typed-key" {
				t.Errorf("the model list was asked as %q", got)
			}
			if !strings.Contains(shown.String(), "not shown as you type") {
				t.Errorf("prompt = %q", shown.String())
			}
			if !echoOn() {
				t.Error("the terminal's echo was not restored")
			}
			// What the terminal showed: nothing of the key. (Fd made the
			// master blocking, so it is read without blocking by hand.)
			fd := int(master.Fd())
			if err := unix.SetNonblock(fd, true); err != nil {
				t.Fatal(err)
			}
			var echoed []byte
			buf := make([]byte, 4096)
			for {
				n, err := unix.Read(fd, buf)
				if n <= 0 || err != nil {
					break
				}
				echoed = append(echoed, buf[:n]...)
			}
			if strings.Contains(string(echoed), "sk-typed-key") {
				t.Errorf("the terminal echoed the key: %q", echoed)
			}
		})
	}
}
