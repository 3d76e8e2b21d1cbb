// Package lock pins what mcpd serves: the lock file (mcpd.lock, beside the
// config) records every definition served — the config's own tools,
// prompts, resources and templates, and each upstream's as it listed them
// — with a digest of each. `mcpd lock` writes it, `mcpd lock --check`
// compares it with what would be served now, and at run time a definition
// an upstream lists that differs from it (or that it does not hold) is
// handled by the upstream's on_drift policy (engine/snapshot).
//
// The file is JSON, written in one stable order (source, kind, name) with
// each definition in full beside its digest, so that a change to an
// upstream's tool shows in a code review as the lines of its description
// or schema that changed. The digest decides; the stored definition is for
// people and for the diff.
package lock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// FileName is the lock file's name, in the directory of the config.
const FileName = "mcpd.lock"

// Version is the lock file format this package writes and reads.
const Version = 1

// Kinds of definition.
const (
	KindTool     = "tool"
	KindPrompt   = "prompt"
	KindResource = "resource"
	KindTemplate = "resource_template"
)

// SourceConfig is the source of the config's own definitions; an
// upstream's is its block's type and name ("mcp_server.everything").
const SourceConfig = "config"

// Def is one definition as it is served (the config's own) or as its
// upstream listed it.
type Def struct {
	Source string `json:"source"`
	Kind   string `json:"kind"`
	// Name is a tool's or prompt's name (an upstream's own name, before any
	// prefix or rename), a resource's URI or a template's URI template.
	Name string `json:"name"`
	// Digest is "sha256:" and the hex SHA-256 of Definition's canonical
	// JSON (see Digest).
	Digest string `json:"digest"`
	// Definition is the definition's JSON object without the name: the
	// description, title, schemas, annotations, arguments, MIME type...
	Definition map[string]any `json:"definition"`
}

// Key identifies a definition within a lock.
type Key struct {
	Source string `json:"source"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
}

func (d *Def) Key() Key { return Key{d.Source, d.Kind, d.Name} }

func (k Key) String() string {
	what := k.Kind + " " + k.Name
	if k.Source != SourceConfig {
		what += " of " + k.Source
	}
	return what
}

// NewDef builds the Def of v, a definition (an *mcp.Tool, *mcp.Prompt, a
// map...) that encodes to a JSON object; its nameField ("name", "uri",
// "uriTemplate") is left out of the pinned definition, since it is the
// key.
func NewDef(source, kind, name string, v any, nameField string) (Def, error) {
	m, err := object(v)
	if err != nil {
		return Def{}, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	delete(m, nameField)
	d := Def{Source: source, Kind: kind, Name: name, Definition: m}
	d.Digest, err = Digest(m)
	return d, err
}

// object is v as a JSON object, numbers kept exact.
func object(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// Digest is the digest of a definition: the SHA-256 of its canonical JSON
// (encoding/json's: object keys sorted, no spaces, numbers as written).
func Digest(def map[string]any) (string, error) {
	b, err := json.Marshal(def)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// File is a lock file's contents.
type File struct {
	LockVersion int    `json:"lock_version"`
	Note        string `json:"note,omitempty"`
	Defs        []Def  `json:"definitions"`

	index map[Key]int
}

// note is written at the top of every lock file, for whoever opens it.
const note = "Written by `mcpd lock`. Review a change here like a change to code: it is what the model will read. `mcpd lock --check` fails when what mcpd would serve differs."

// New returns a lock of defs, sorted.
func New(defs []Def) *File {
	f := &File{LockVersion: Version, Note: note, Defs: append([]Def(nil), defs...)}
	f.sort()
	return f
}

func (f *File) sort() {
	sort.SliceStable(f.Defs, func(i, j int) bool {
		a, b := f.Defs[i], f.Defs[j]
		if a.Source != b.Source {
			// The config's own first, then the upstreams by name.
			if a.Source == SourceConfig || b.Source == SourceConfig {
				return a.Source == SourceConfig
			}
			return a.Source < b.Source
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	f.index = make(map[Key]int, len(f.Defs))
	for i := range f.Defs {
		f.index[f.Defs[i].Key()] = i
	}
}

// Get returns the locked definition of k.
func (f *File) Get(k Key) (*Def, bool) {
	if f == nil {
		return nil, false
	}
	i, ok := f.index[k]
	if !ok {
		return nil, false
	}
	return &f.Defs[i], true
}

// HasSource reports whether the lock holds any definition of source.
func (f *File) HasSource(source string) bool {
	if f == nil {
		return false
	}
	for i := range f.Defs {
		if f.Defs[i].Source == source {
			return true
		}
	}
	return false
}

// Marshal encodes the lock as its file is written: indented JSON in a
// stable order, ending with a newline.
func (f *File) Marshal() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		panic(err) // maps, strings and json.Numbers only
	}
	return buf.Bytes()
}

// Parse decodes a lock file; name is for errors.
func Parse(name string, data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: not a lock file: %w (write it again with mcpd lock)", name, err)
	}
	if f.LockVersion != Version {
		return nil, fmt.Errorf("%s: lock_version %d; this mcpd reads version %d (write it again with mcpd lock)", name, f.LockVersion, Version)
	}
	seen := map[Key]bool{}
	for i, d := range f.Defs {
		if d.Source == "" || d.Kind == "" || d.Name == "" || d.Digest == "" {
			return nil, fmt.Errorf("%s: definition %d lacks its source, kind, name or digest", name, i+1)
		}
		if seen[d.Key()] {
			return nil, fmt.Errorf("%s: %s is locked twice", name, d.Key())
		}
		seen[d.Key()] = true
	}
	f.sort()
	return &f, nil
}

// Read reads the lock file at path; a file that does not exist is (nil,
// nil): no lock.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Write writes f to path atomically (a temporary file renamed over it), so
// that a server reloading on the change never reads half a lock.
func Write(path string, f *File) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(f.Marshal()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// PathFor is the lock file of a config loaded from paths: mcpd.lock in
// the first path when it is a directory, else beside the first file.
func PathFor(paths []string) string {
	if len(paths) == 0 {
		return FileName
	}
	p := paths[0]
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return filepath.Join(p, FileName)
	}
	return filepath.Join(filepath.Dir(p), FileName)
}
