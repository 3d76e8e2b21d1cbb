package config

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// pieceSize is the least size of a piece of a file parsed in pieces (see
// parseConfig). Measured on a 1,000-tool file, loading allocated 70 MB with
// 32 KiB pieces, 60 MB with 4 KiB, 51 MB with 2 KiB and 1 KiB, and more
// again with 512 bytes, where each piece's own overhead starts to tell.
const pieceSize = 2 << 10

// parseFileOverlay is parseFile reading name's contents from overlay
// when it holds them.
func parseFileOverlay(filename string, overlay map[string][]byte) (hcl.Body, []byte, hcl.Diagnostics) {
	if src, ok := overlay[filename]; ok {
		body, diags := parseConfig(src, filename, pieceSize)
		return body, src, diags
	}
	return parseFile(filename)
}

// parseFile reads and parses one config file. It reports a file that
// cannot be read as hclparse does; src is nil then.
func parseFile(filename string) (body hcl.Body, src []byte, diags hcl.Diagnostics) {
	src, err := os.ReadFile(filename)
	if err != nil {
		return nil, nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Failed to read file",
			Detail:   fmt.Sprintf("The configuration file %q could not be read.", filename),
		}}
	}
	body, diags = parseConfig(src, filename, pieceSize)
	return body, src, diags
}

// parseConfig parses src as hclsyntax.ParseConfig does and returns its
// body. A file is parsed in pieces of about size bytes, cut between
// top-level blocks, and the pieces' blocks are joined into one body. The HCL
// lexer keeps every token of a file in one slice (96 bytes a token) that it
// grows as it goes, by a quarter at a time once it is large: lexing a
// 1,000-tool file left 33 MB of outgrown slices behind, half of all a load
// allocated, and a 10,000-tool file hundreds of megabytes of copying into
// memory the process had never touched. Small pieces keep every slice
// small. Each piece starts at its own line and byte offset, so every range
// is the one a whole-file parse gives, and pieces are parsed in parallel
// when there is more than one processor.
//
// A cut is only made after a line holding just "}" and before a line that
// starts a new block or a comment at column 1 (see cutPoints). Should that still fall inside a heredoc or
// comment, the piece before it does not parse; so when any piece has an
// error, or two pieces set the same top-level attribute, the file is parsed
// whole instead, and the diagnostics are the whole-file ones.
func parseConfig(src []byte, filename string, size int) (hcl.Body, hcl.Diagnostics) {
	cuts := cutPoints(src, size)
	if len(cuts) == 0 {
		return parseWhole(src, filename)
	}
	type piece struct {
		start, end int
		pos        hcl.Pos
		body       *hclsyntax.Body
		diags      hcl.Diagnostics
	}
	pieces := make([]piece, len(cuts)+1)
	start, pos := 0, hcl.InitialPos
	for i := range pieces {
		end := len(src)
		if i < len(cuts) {
			end = cuts[i]
		}
		pieces[i] = piece{start: start, end: end, pos: pos}
		pos = hcl.Pos{Line: pos.Line + bytes.Count(src[start:end], []byte{'\n'}), Column: 1, Byte: end}
		start = end
	}
	// Pieces are independent: with more than one processor, parse them
	// side by side.
	parse := func(p *piece) {
		f, d := hclsyntax.ParseConfig(src[p.start:p.end], filename, p.pos)
		p.body, p.diags = f.Body.(*hclsyntax.Body), d
	}
	if workers := min(runtime.GOMAXPROCS(0), len(pieces)); workers > 1 {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < len(pieces); i = int(next.Add(1)) - 1 {
					parse(&pieces[i])
				}
			}()
		}
		wg.Wait()
	} else {
		for i := range pieces {
			parse(&pieces[i])
		}
	}
	merged := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}}
	var diags hcl.Diagnostics
	for i := range pieces {
		p := &pieces[i]
		if p.diags.HasErrors() {
			return parseWhole(src, filename)
		}
		diags = append(diags, p.diags...)
		for name, a := range p.body.Attributes {
			if _, dup := merged.Attributes[name]; dup {
				return parseWhole(src, filename)
			}
			merged.Attributes[name] = a
		}
		merged.Blocks = append(merged.Blocks, p.body.Blocks...)
	}
	first, last := pieces[0].body, pieces[len(pieces)-1].body
	merged.SrcRange = hcl.Range{Filename: filename, Start: first.SrcRange.Start, End: last.SrcRange.End}
	merged.EndRange = last.EndRange
	return merged, diags
}

func parseWhole(src []byte, filename string) (hcl.Body, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if f == nil {
		return nil, diags
	}
	return f.Body, diags
}

// cutPoints returns the byte offsets at which src may be cut into pieces of
// at least size bytes: the start of a line that begins, at column 1, a
// top-level block (a letter) or a comment, when the last line before it
// that is neither blank nor a comment holds only "}" (the end of the
// previous block).
func cutPoints(src []byte, size int) []int {
	if len(src) < 2*size {
		return nil
	}
	var cuts []int
	last := 0
	afterClose := false
	for off := 0; off < len(src); {
		nl := bytes.IndexByte(src[off:], '\n')
		lineEnd := len(src)
		if nl >= 0 {
			lineEnd = off + nl
		}
		line := bytes.TrimRight(src[off:lineEnd], " \t\r")
		comment := len(line) > 0 && (line[0] == '#' || line[0] == '/')
		if afterClose && (comment || len(line) > 0 && isLetter(line[0])) && off-last >= size && len(src)-off >= size {
			cuts = append(cuts, off)
			last = off
		}
		switch {
		case len(line) == 1 && line[0] == '}':
			afterClose = true
		case len(bytes.TrimLeft(line, " \t")) == 0 || comment:
			// Blank lines and comments between blocks keep the state.
		default:
			afterClose = false
		}
		off = lineEnd + 1
	}
	return cuts
}

func isLetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
