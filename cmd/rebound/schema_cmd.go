package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	reboundschema "github.com/rebound-agent/rebound/schema"
)

func init() {
	register(command{
		name:    "schema",
		summary: "print or write the JSON Schemas (config file, session log, retry progress, mock script)",
		run:     runSchemaCommand,
	})
}

const schemaUsage = `Usage: rebound schema                 list the schemas
       rebound schema NAME            print one schema to stdout
       rebound schema --out DIR [NAME...]
                                      write the schemas (all, or those named)
                                      to DIR, creating it; print each path

Prints the JSON Schemas (draft 2020-12) generated from Rebound's Go types. They
are the same bytes as the copies checked in under schema/ in the repository.
NAME is a schema's short name (config) or its file name (config.schema.json).

Schemas:
%s
Exit status: 0 on success, 1 if a file cannot be written, 2 for a usage error
(such as an unknown NAME).

Flags:
`

// schemaFile is one generated schema, by its short name and file name.
type schemaFile struct {
	name, file, title string
	data              []byte
}

// schemaFiles returns every checked-in schema, sorted by name.
func schemaFiles() ([]schemaFile, error) {
	all, err := reboundschema.Files()
	if err != nil {
		return nil, err
	}
	out := make([]schemaFile, len(all))
	for i, f := range all {
		out[i] = schemaFile{name: f.Name, file: f.File, title: f.Title, data: f.Data}
	}
	return out, nil
}

func schemaList(files []schemaFile) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "  %-15s %-27s %s\n", f.name, f.file, f.title)
	}
	return b.String()
}

func runSchemaCommand(ctx context.Context, args []string, s streams, e env) int {
	files, err := schemaFiles()
	if err != nil {
		fmt.Fprintf(s.err, "rebound schema: %v\n", err)
		return 1
	}
	fs := flag.NewFlagSet("rebound schema", flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), schemaUsage, schemaList(files))
		fs.PrintDefaults()
	}
	out := fs.String("out", "", "write the schema files to `DIR` (created if missing) instead of stdout, and print the paths written")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}

	var picked []schemaFile
	for _, arg := range fs.Args() {
		i := slices.IndexFunc(files, func(f schemaFile) bool { return arg == f.name || arg == f.file })
		if i < 0 {
			fmt.Fprintf(s.err, "rebound schema: unknown schema %q; the schemas are:\n%s", arg, schemaList(files))
			return 2
		}
		picked = append(picked, files[i])
	}

	if *out == "" {
		switch len(picked) {
		case 0:
			fmt.Fprint(s.out, schemaList(files))
		case 1:
			if _, err := s.out.Write(picked[0].data); err != nil {
				fmt.Fprintf(s.err, "rebound schema: %v\n", err)
				return 1
			}
		default:
			fmt.Fprintln(s.err, "rebound schema: name one schema to print, or use --out DIR to write several")
			return 2
		}
		return 0
	}

	if len(picked) == 0 {
		picked = files
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(s.err, "rebound schema: --out: %v\n", err)
		return 1
	}
	for _, f := range picked {
		path := filepath.Join(*out, f.file)
		if err := os.WriteFile(path, f.data, 0o644); err != nil {
			fmt.Fprintf(s.err, "rebound schema: %v\n", err)
			return 1
		}
		fmt.Fprintln(s.out, path)
	}
	return 0
}
