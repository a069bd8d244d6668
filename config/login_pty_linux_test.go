package config_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
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

// On a terminal, Login prompts and reads the key with echo off, and gives
// the terminal its echo back.
func TestLogin_Terminal(t *testing.T) {
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
	home := t.TempDir()
	type result struct {
		res config.LoginResult
		err error
	}
	done := make(chan result, 1)
	var prompt bytes.Buffer
	go func() {
		res, err := config.Login(t.Context(), config.Flags{}, env{}.get, home, tty, &prompt)
		done <- result{res, err}
	}()
	// Type the key only once echo is off, as a person would after the
	// prompt.
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
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Login did not return after the key was typed")
	}
	if r.err != nil {
		t.Fatalf("Login() = %v", r.err)
	}
	if got, _ := config.ReadAPIKey(r.res.Path, "OPENAI_API_KEY"); got != "sk-typed-key" {
		t.Errorf("stored key = %q, want sk-typed-key", got)
	}
	if !strings.Contains(prompt.String(), "API key for https://api.openai.com/v1") || !strings.Contains(prompt.String(), "not shown as you type") {
		t.Errorf("prompt = %q", prompt.String())
	}
	if !echoOn() {
		t.Error("the terminal's echo was not restored")
	}
	// What the terminal showed: nothing of the key. (Fd made the master
	// blocking, so it is read without blocking by hand.)
	fd := int(master.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	var shown []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		shown = append(shown, buf[:n]...)
	}
	if strings.Contains(string(shown), "sk-typed-key") {
		t.Errorf("the terminal echoed the key: %q", shown)
	}
}
