package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Manifest is a registry entry's agent.json, its fields in the schema's
// order so that a manifest written back reads like the one checked in.
type Manifest struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository,omitempty"`
	Website      string       `json:"website,omitempty"`
	Authors      []string     `json:"authors,omitempty"`
	License      string       `json:"license,omitempty"`
	LicenseURL   string       `json:"license_url,omitempty"`
	Icon         string       `json:"icon,omitempty"`
	Distribution Distribution `json:"distribution"`
}

// Distribution is agent.json's distribution. Rebound ships binaries only;
// the package kinds are kept so that a manifest using them still reads.
type Distribution struct {
	Binary map[string]BinaryTarget `json:"binary,omitempty"`
	Npx    json.RawMessage         `json:"npx,omitempty"`
	Uvx    json.RawMessage         `json:"uvx,omitempty"`
}

// BinaryTarget is one platform's download.
type BinaryTarget struct {
	Archive string            `json:"archive"`
	SHA256  string            `json:"sha256,omitempty"`
	Cmd     string            `json:"cmd"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// ParseManifest reads agent.json. A field Manifest does not know is an
// error, since writing the manifest back would drop it.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("agent.json: %w", err)
	}
	return m, nil
}

// Marshal is agent.json as checked in: two-space indents, a final newline.
func (m Manifest) Marshal() ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	if err := e.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Schema is the registry's agent.schema.json, compiled.
type Schema struct{ s *jsonschema.Schema }

// LoadSchema compiles the schema at path (testdata/registry/agent.schema.json).
func LoadSchema(path string) (*Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	// The registry's Python jsonschema does not assert formats; asserting
	// them here catches a malformed URL before the registry's URL check would.
	c.AssertFormat()
	if err := c.AddResource("agent.schema.json", doc); err != nil {
		return nil, err
	}
	s, err := c.Compile("agent.schema.json")
	if err != nil {
		return nil, err
	}
	return &Schema{s}, nil
}

// Validate checks agent.json's bytes against the schema.
func (s *Schema) Validate(data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("agent.json is not JSON: %w", err)
	}
	if err := s.s.Validate(inst); err != nil {
		return fmt.Errorf("agent.json does not match the registry's schema: %w", err)
	}
	return nil
}

// The registry's rules (.github/workflows/build_registry.py).
var (
	requiredOS       = []string{"darwin", "linux", "windows"}
	rejectedArchives = []string{".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"}
	urlVersion       = regexp.MustCompile(`/(?:download|releases)/v?([\d.]+)/`)
)

// CheckManifest applies the registry CI's checks of an entry that need no
// network: the schema, the id (dir is the entry's directory, which the id
// must equal), a semantic version, every OS family built for, archive
// formats, and each download naming the entry's version and never
// /latest/. Two checks are stricter than the registry's: a build for every
// OS is an error, not a warning, and an archive URL must name a version at
// all and be https to a public host (the registry fetches it).
func CheckManifest(data []byte, dir string, schema *Schema) []error {
	if schema != nil {
		if err := schema.Validate(data); err != nil {
			// The registry stops at a schema error too.
			return []error{err}
		}
	}
	m, err := ParseManifest(data)
	if err != nil {
		return []error{err}
	}
	var p problems
	p.checkID(m.ID, dir)
	if !isSemver(m.Version) {
		p.add("version %q must be a semantic version (e.g. 1.0.0)", m.Version)
	}
	d := m.Distribution
	if d.Binary == nil && d.Npx == nil && d.Uvx == nil {
		p.add("distribution is empty")
	}
	var oses []string
	for _, platform := range slices.Sorted(maps.Keys(d.Binary)) {
		t, ok := LookupTarget(platform)
		if !ok {
			p.add("unknown platform %q", platform)
			continue
		}
		if !slices.Contains(oses, t.OS()) {
			oses = append(oses, t.OS())
		}
		p.checkBinary(platform, d.Binary[platform], m.Version)
	}
	if d.Binary != nil {
		for _, os := range requiredOS {
			if !slices.Contains(oses, os) {
				p.add("no build for %s: the registry wants darwin, linux and windows", os)
			}
		}
	}
	return p
}

// problems are what a check found.
type problems []error

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Errorf(format, args...))
}

// checkID checks the entry's id, which must be its directory's name.
func (p *problems) checkID(id, dir string) {
	switch {
	case id == "":
		p.add("id is empty")
	case !unicode.IsLetter(rune(id[0])):
		p.add("id %q must start with a letter", id)
	case strings.ContainsFunc(id, func(r rune) bool { return !unicode.IsLower(r) && !unicode.IsDigit(r) && r != '-' }):
		p.add("id %q must be lowercase letters, digits and hyphens", id)
	case id != dir:
		p.add("id %q must match the entry's directory name %q", id, dir)
	}
}

// checkBinary checks the build for platform of an entry of version.
func (p *problems) checkBinary(platform string, b BinaryTarget, version string) {
	if b.Cmd == "" {
		p.add("%s: cmd is missing", platform)
	}
	if b.Archive == "" {
		p.add("%s: archive is missing", platform)
		return
	}
	lower := strings.ToLower(b.Archive)
	for _, ext := range rejectedArchives {
		if strings.HasSuffix(lower, ext) {
			p.add("%s: archive %s is an installer (%s); the registry takes .zip, .tar.gz, .tgz, .tar.bz2, .tbz2 or a raw binary", platform, b.Archive, ext)
		}
	}
	if err := publicHTTPS(b.Archive); err != nil {
		p.add("%s: archive %s: %v", platform, b.Archive, err)
	}
	if strings.Contains(b.Archive, "/latest/") {
		p.add("%s: archive %s uses /latest/; name the version", platform, b.Archive)
	} else if v := urlVersion.FindStringSubmatch(b.Archive); v == nil {
		p.add("%s: archive %s names no version (/download/v%s/)", platform, b.Archive, version)
	} else if got := normalizeVersion(v[1]); got != version {
		p.add("%s: archive %s is of version %s, but the entry is %s", platform, b.Archive, got, version)
	}
}

// isSemver is the registry's test: three dot-separated numbers first.
func isSemver(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 3 {
		return false
	}
	for _, p := range parts[:3] {
		if p == "" || strings.ContainsFunc(p, func(r rune) bool { return r < '0' || r > '9' }) {
			return false
		}
	}
	return true
}

// normalizeVersion pads 1.2 to 1.2.0 and cuts 1.2.3.4 to 1.2.3, as the
// registry does before comparing a URL's version with the entry's.
func normalizeVersion(v string) string {
	parts := strings.Split(v, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	return strings.Join(parts[:3], ".")
}

// publicHTTPS is the registry's test of a URL it will fetch, without the
// DNS lookup: https, and not a loopback, private or link-local address.
func publicHTTPS(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "https" {
		return fmt.Errorf("not https")
	}
	host := u.Hostname()
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".local") {
		return fmt.Errorf("host %q is not public", host)
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()) {
		return fmt.Errorf("host %s is not public", host)
	}
	return nil
}
