// Package schema holds Rebound's JSON Schemas, as generated from the Go types
// by schema/generate and checked in next to this file. They are embedded so
// `rebound schema` can print them without the generator and its
// dependencies in the binary; the tests here keep them fresh.
package schema

import (
	"embed"
	"encoding/json"
	"io/fs"
	"strings"
)

//go:embed *.schema.json
var files embed.FS

// File is one checked-in schema.
type File struct {
	Name  string // short name, e.g. "config"
	File  string // file name, e.g. "config.schema.json"
	Title string
	Data  []byte
}

// Files returns every schema, sorted by file name.
func Files() ([]File, error) {
	names, err := fs.Glob(files, "*.schema.json")
	if err != nil {
		return nil, err
	}
	var out []File
	for _, name := range names { // fs.Glob sorts
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var head struct {
			Title string `json:"title"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, err
		}
		out = append(out, File{Name: strings.TrimSuffix(name, ".schema.json"), File: name, Title: head.Title, Data: data})
	}
	return out, nil
}
