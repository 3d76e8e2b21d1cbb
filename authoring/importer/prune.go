package importer

import (
	"fmt"
	"regexp"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Prune removes from a generated configuration the top-level blocks that
// hold an error: a converter that missed a case the loader refuses costs
// that one tool (or backend), not the whole import. It returns the rest,
// formatted, and one line per block removed, naming it and the error.
func Prune(src []byte, errs hcl.Diagnostics) ([]byte, []string) {
	parsed, diags := hclsyntax.ParseConfig(src, "generated.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return src, nil
	}
	file, diags := hclwrite.ParseConfig(src, "generated.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return src, nil
	}
	syntaxBlocks := parsed.Body.(*hclsyntax.Body).Blocks
	writeBlocks := file.Body().Blocks()
	if len(syntaxBlocks) != len(writeBlocks) {
		return src, nil
	}
	var removed []string
	for i, b := range syntaxBlocks {
		rng := b.Range()
		for _, d := range errs {
			if d.Subject == nil || d.Subject.Start.Line < rng.Start.Line || d.Subject.Start.Line > rng.End.Line {
				continue
			}
			name := b.Type
			if len(b.Labels) > 0 {
				name = fmt.Sprintf("%s %q", b.Type, b.Labels[0])
			}
			removed = append(removed, fmt.Sprintf("%s left out: mcpd refused it: %s: %s", name, d.Summary, d.Detail))
			file.Body().RemoveBlock(writeBlocks[i])
			break
		}
	}
	if len(removed) == 0 {
		return src, nil
	}
	// The blank line before each removed block stays behind; the
	// importers write no multi-line strings, so runs of blank lines can be
	// folded.
	return blankRuns.ReplaceAll(hclwrite.Format(file.Bytes()), []byte("\n\n")), removed
}

var blankRuns = regexp.MustCompile(`\n{3,}`)
