package lsp

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/mcpd/mcpd/engine/loader"
)

// dirResult is the outcome of the last load of one directory.
type dirResult struct {
	diags     hcl.Diagnostics
	sources   map[string][]byte // the text each file had in that load
	published map[string]bool   // files last published with diagnostics
}

// schedule (re)starts dir's debounce timer.
func (s *Server) schedule(dir string) {
	if !filepath.IsAbs(dir) {
		return // not a file's directory (an untitled: buffer)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.timers[dir]; ok && t.Stop() {
		s.wg.Done() // a stopped timer's func never runs
	}
	s.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(s.debounce, func() {
		defer s.wg.Done()
		s.mu.Lock()
		current := s.timers[dir] == t
		if current {
			delete(s.timers, dir)
		}
		s.mu.Unlock()
		if current {
			s.loadDir(dir)
		}
	})
	s.timers[dir] = t
}

// loadDir loads dir as `mcpd validate` does (a missing secret is a
// warning), with the open buffers in place of their files, and publishes
// the diagnostics of every config file in it, empty ones included, so that
// fixed problems disappear.
func (s *Server) loadDir(dir string) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("lsp: panic loading a directory", "dir", dir, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	s.mu.Lock()
	// Loads of one directory may overlap when one takes longer than the
	// debounce; only the last one started may publish, so that an older
	// text's diagnostics never replace a newer one's.
	s.gen[dir]++
	gen := s.gen[dir]
	overlay := map[string][]byte{}
	for name, src := range s.docs {
		if filepath.Dir(name) == dir {
			overlay[name] = src
		}
	}
	s.mu.Unlock()
	loaded := loader.LoadWith([]string{dir}, s.reg, nil, "lsp", loader.Options{UnsetEnvWarning: true, CheckOnly: true, Overlay: overlay})
	var inputs map[string]any
	if loaded.Snapshot != nil {
		inputs = map[string]any{}
		for _, name := range toolNames(loaded) {
			if t, ok := loaded.Snapshot.Tool(name); ok {
				inputs[name] = t.InputSchema
			}
		}
		loaded.Snapshot.Close()
	}
	s.mu.Lock()
	stale := s.gen[dir] != gen
	if !stale && inputs != nil {
		s.inputs[dir] = inputs
	}
	s.mu.Unlock()
	if stale {
		return
	}

	byFile := map[string][]protocol.Diagnostic{}
	files := map[string]bool{}
	for _, f := range loaded.Files {
		files[f] = true
	}
	for name := range overlay {
		if isConfig(name) {
			files[name] = true
		}
	}
	for _, d := range loaded.Diagnostics {
		if d.Subject == nil {
			// Not about a place (an unreadable directory): show it at the
			// top of every open file of the directory.
			for name := range overlay {
				byFile[name] = append(byFile[name], toDiagnostic(d, nil))
			}
			continue
		}
		name := d.Subject.Filename
		src, ok := overlay[name]
		if !ok {
			src = loaded.Sources[name]
		}
		byFile[name] = append(byFile[name], toDiagnostic(d, src))
		files[name] = true
	}
	s.mu.Lock()
	prev := s.results[dir]
	s.results[dir] = &dirResult{diags: loaded.Diagnostics, sources: loaded.Sources, published: map[string]bool{}}
	for name := range byFile {
		s.results[dir].published[name] = true
	}
	s.mu.Unlock()
	if prev != nil {
		for name := range prev.published {
			files[name] = true
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ds := byFile[name]
		if ds == nil {
			ds = []protocol.Diagnostic{}
		}
		s.notify(protocol.ServerTextDocumentPublishDiagnostics, protocol.PublishDiagnosticsParams{URI: pathToURI(name), Diagnostics: ds})
	}
}

func toolNames(l *loader.Loaded) []string {
	if l.Config == nil {
		return nil
	}
	var out []string
	for _, t := range l.Config.Tools {
		out = append(out, t.Name)
	}
	return out
}

// toDiagnostic is d as `mcpd validate` prints it: the summary, then the
// detail, at the subject's range (src converts its columns to UTF-16).
func toDiagnostic(d *hcl.Diagnostic, src []byte) protocol.Diagnostic {
	sev := protocol.DiagnosticSeverityError
	if d.Severity == hcl.DiagWarning {
		sev = protocol.DiagnosticSeverityWarning
	}
	msg := d.Summary
	if d.Detail != "" {
		msg += ": " + d.Detail
	}
	source := "mcpd"
	out := protocol.Diagnostic{Severity: &sev, Source: &source, Message: msg}
	if d.Subject != nil {
		out.Range = toRange(*d.Subject, src)
	}
	return out
}

func toRange(r hcl.Range, src []byte) protocol.Range {
	return protocol.Range{Start: toPosition(r.Start, src), End: toPosition(r.End, src)}
}

// toPosition turns an HCL position (1-based line, byte offset) into an LSP
// one (0-based line, UTF-16 code units).
func toPosition(p hcl.Pos, src []byte) protocol.Position {
	line := p.Line - 1
	if line < 0 {
		line = 0
	}
	col := p.Column - 1
	if src != nil && p.Byte <= len(src) && p.Byte >= 0 {
		start := p.Byte
		for start > 0 && src[start-1] != '\n' {
			start--
		}
		col = utf16Len(src[start:p.Byte])
	}
	if col < 0 {
		col = 0
	}
	return protocol.Position{Line: protocol.UInteger(line), Character: protocol.UInteger(col)}
}

func utf16Len(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		n += len(utf16.Encode([]rune{r}))
	}
	return n
}

// offset is the byte offset in src of an LSP position.
func offset(src []byte, p protocol.Position) int {
	line, i := 0, 0
	for i < len(src) && line < int(p.Line) {
		if src[i] == '\n' {
			line++
		}
		i++
	}
	units := 0
	for i < len(src) && src[i] != '\n' && units < int(p.Character) {
		r, size := utf8.DecodeRune(src[i:])
		units += len(utf16.Encode([]rune{r}))
		i += size
	}
	return i
}

// applyEdit replaces rng of src with text.
func applyEdit(src []byte, rng protocol.Range, text string) []byte {
	a, b := offset(src, rng.Start), offset(src, rng.End)
	if b < a {
		a, b = b, a
	}
	out := append([]byte{}, src[:a]...)
	out = append(out, text...)
	return append(out, src[b:]...)
}

// readSource is the text of name: its open buffer, else the file on disk.
func (s *Server) readSource(name string) []byte {
	if src, ok := s.source(name); ok {
		return src
	}
	src, _ := os.ReadFile(name)
	return src
}
