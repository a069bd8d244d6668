package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// decls is what the module's non-test Go code declares: every top-level
// name by package (the directory's base name), every method and field by
// its type, and every file by its path and base name.
type decls struct {
	pkg     map[string]map[string]bool // package → top-level names
	members map[string]map[string]bool // type → methods and fields
	where   map[string]map[string]bool // "Type.Method" or "Func" → base names of the files declaring it
	files   map[string]bool            // slash paths from the root, and base names
	types   map[string]bool
}

func readDecls(t *testing.T, root string) decls {
	t.Helper()
	d := decls{pkg: map[string]map[string]bool{}, members: map[string]map[string]bool{}, where: map[string]map[string]bool{},
		files: map[string]bool{}, types: map[string]bool{}}
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && path != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if e.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		d.files[filepath.ToSlash(rel)], d.files[e.Name()] = true, true
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(rel, "testdata") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg, base := filepath.Base(filepath.Dir(path)), e.Name()
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				name := decl.Name.Name
				if decl.Recv != nil && len(decl.Recv.List) > 0 {
					recv := decl.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if ix, ok := recv.(*ast.IndexExpr); ok {
						recv = ix.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						add(d.members, id.Name, name)
						add(d.where, id.Name+"."+name, base)
					}
					continue
				}
				add(d.pkg, pkg, name)
				add(d.where, name, base)
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						add(d.pkg, pkg, spec.Name.Name)
						d.types[spec.Name.Name] = true
						if st, ok := spec.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									add(d.members, spec.Name.Name, n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							add(d.pkg, pkg, n.Name)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// declared reports whether name ("Name", "Type.Member" or "pkg.Name")
// is declared in the module.
func (d decls) declared(name string) bool {
	x, y, dotted := strings.Cut(name, ".")
	if !dotted {
		for _, names := range d.pkg {
			if names[name] {
				return true
			}
		}
		return d.members[name] != nil
	}
	return d.members[x][y] || d.pkg[x][y]
}

// The README's Architecture section is a map a newcomer follows to the
// code: every file it names exists, every function, type or method it
// names is declared, and a name the one-turn diagram places in a file
// ("Agent.Prompt (turn.go)") is declared in that file. Code moves often;
// a map that points at what moved is worse than none.
func TestArchitecture_MapNamesWhatIsThere(t *testing.T) {
	readme := string(readFile(t, "../../README.md"))
	start := strings.Index(readme, "\n## Architecture\n")
	if start < 0 {
		t.Fatal("README.md has no Architecture section")
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	d := readDecls(t, filepath.Join("..", ".."))

	// Words in backticks that are not code names: event types, settings,
	// capabilities, commands (anything with a space or a slash is skipped).
	notCode := map[string]bool{"data": true, "flock": true, "status": true, "llm": true, "inspect": true}
	ident := regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$`)
	checked := 0
	for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(section, -1) {
		tok := m[1]
		switch {
		case strings.HasSuffix(tok, ".go"):
			checked++
			if !d.files[tok] {
				t.Errorf("the Architecture section names %s, which is not in the tree", tok)
			}
		case strings.HasSuffix(tok, "/"):
			if !d.files[strings.TrimSuffix(tok, "/")+"/"] && !dirExists(filepath.Join("..", "..", tok)) {
				t.Errorf("the Architecture section names the directory %s, which is not in the tree", tok)
			}
		case notCode[tok] || !ident.MatchString(tok):
		default:
			checked++
			if !d.declared(tok) {
				t.Errorf("the Architecture section names %s, which nothing in the module declares", tok)
			}
		}
	}

	// The diagram: "Type.Method (file.go)" says where it is.
	diagram := section[strings.Index(section, "```")+3:]
	diagram = diagram[:strings.Index(diagram, "```")]
	for _, m := range regexp.MustCompile(`([A-Za-z_]\w*)\.([A-Za-z_]\w*) \(([\w/]+\.go)`).FindAllStringSubmatch(diagram, -1) {
		checked++
		name, file := m[1]+"."+m[2], filepath.Base(m[3])
		if !d.where[name][file] {
			t.Errorf("the Architecture diagram places %s in %s, which does not declare it", name, m[3])
		}
	}
	// And every Type.Method it names, where Type is one of the module's types.
	for _, m := range regexp.MustCompile(`\b([A-Z]?[A-Za-z_]\w*)\.([A-Za-z_]\w*)\b`).FindAllStringSubmatch(diagram, -1) {
		if d.types[m[1]] && m[2] != "go" {
			checked++
			if !d.members[m[1]][m[2]] {
				t.Errorf("the Architecture diagram names %s.%s, which %s does not have", m[1], m[2], m[1])
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d names checked: has the section's form changed?", checked)
	}
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
