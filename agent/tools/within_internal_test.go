package tools

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Windows paths pass the workspace check as NTFS sees them: the drive
// letter and every name in any case, and only below the root, never beside
// it. The rule is pure, so it runs on every host.
func TestWithinPath_Windows(t *testing.T) {
	for _, tt := range []struct {
		root, p string
		want    bool
	}{
		{`C:\proj`, `C:\proj`, true},
		{`C:\proj`, `c:\PROJ`, true},
		{`C:\proj`, `C:\Proj\src\main.go`, true},
		{`C:\Users\Ann\proj`, `c:\users\ann\PROJ\.git\config`, true},
		{`C:\`, `c:\anything`, true},
		{`\\server\share\proj`, `\\SERVER\Share\proj\x`, true},
		{`C:\proj`, `C:\project`, false},
		{`C:\proj`, `C:\PROJECT\x`, false},
		{`C:\proj`, `D:\proj\x`, false},
		{`C:\proj`, `C:\`, false},
		{`C:\proj`, `C:\pro`, false},
		{`C:\proj`, `C:/proj/x`, false}, // not clean: Clean turns / into \ first
	} {
		if got := withinPath(tt.root, tt.p, '\\', true); got != tt.want {
			t.Errorf("withinPath(%q, %q) = %v, want %v", tt.root, tt.p, got, tt.want)
		}
	}
	// Without folding (every other platform) a differently cased path is
	// outside: on a case-sensitive volume it is another directory.
	if withinPath(`/home/ann/proj`, `/home/ann/Proj/x`, '/', false) {
		t.Error("a differently cased path passed without folding")
	}
}

// Property: with folding, p is within root exactly when, lower-cased, root
// is p or a parent of p: whatever the case of either.
func TestWithinPath_FoldProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 1))
	names := []string{"proj", "Proj", "PROJ", "pro", "project", "src", "SRC", ".git", "a", "ab"}
	mix := func(s string) string {
		b := []byte(s)
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = strings.ToUpper(string(b[i]))[0]
			}
		}
		return string(b)
	}
	path := func(n int) string {
		parts := []string{"C:"}
		for range n {
			parts = append(parts, names[r.IntN(len(names))])
		}
		return strings.Join(parts, `\`)
	}
	for range 20000 {
		root, p := path(1+r.IntN(3)), path(1+r.IntN(5))
		if r.IntN(3) == 0 {
			p = mix(root) + `\` + mix(path(r.IntN(3))[2:])
			p = strings.TrimSuffix(p, `\`)
		}
		lr, lp := strings.ToLower(root), strings.ToLower(p)
		want := lp == lr || strings.HasPrefix(lp, lr+`\`)
		if got := withinPath(root, p, '\\', true); got != want {
			t.Fatalf("withinPath(%q, %q) = %v, want %v", root, p, got, want)
		}
		if got := withinPath(root, p, '\\', false); got != (p == root || strings.HasPrefix(p, root+`\`)) {
			t.Fatalf("withinPath(%q, %q) without folding = %v", root, p, got)
		}
	}
}
