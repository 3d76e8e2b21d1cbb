package lock

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Change statuses.
const (
	Changed = "changed" // locked, and now different
	Added   = "new"     // served now, not locked
	Removed = "removed" // locked, not served now
)

// Change is one definition that differs from the lock.
type Change struct {
	Key    Key
	Status string // Changed, Added or Removed
	// Locked and Now are the definitions (nil when absent).
	Locked, Now *Def
	// Fields are what changed, for Changed: one entry per leaf that
	// differs, in path order.
	Fields []FieldChange
}

// FieldChange is one value that differs between the locked definition and
// the current one.
type FieldChange struct {
	// Path names the value: "description", "inputSchema.properties.path",
	// "inputSchema.required".
	Path string `json:"path"`
	// Old and New are the values (nil: absent).
	Old any `json:"old,omitempty"`
	New any `json:"new,omitempty"`
}

// Compare lists how now differs from locked, in the lock's order. A nil
// locked holds nothing: every definition is new.
func Compare(locked *File, now []Def) []Change {
	cur := New(now)
	var out []Change
	for i := range cur.Defs {
		d := &cur.Defs[i]
		if c, ok := Check(locked, d); !ok {
			out = append(out, c)
		}
	}
	if locked != nil {
		for i := range locked.Defs {
			d := &locked.Defs[i]
			if _, ok := cur.Get(d.Key()); !ok {
				out = append(out, Change{Key: d.Key(), Status: Removed, Locked: d})
			}
		}
	}
	sortChanges(out)
	return out
}

// Check compares one definition with the lock: ok when the lock holds it
// with the same digest.
func Check(locked *File, d *Def) (Change, bool) {
	old, ok := locked.Get(d.Key())
	if !ok {
		return Change{Key: d.Key(), Status: Added, Now: d}, false
	}
	if old.Digest == d.Digest {
		return Change{}, true
	}
	return Change{Key: d.Key(), Status: Changed, Locked: old, Now: d, Fields: Fields(old.Definition, d.Definition)}, false
}

func sortChanges(cs []Change) {
	f := &File{}
	for _, c := range cs {
		f.Defs = append(f.Defs, Def{Source: c.Key.Source, Kind: c.Key.Kind, Name: c.Key.Name})
	}
	order := map[Key]int{}
	f.sort()
	for i, d := range f.Defs {
		order[d.Key()] = i
	}
	sort.SliceStable(cs, func(i, j int) bool { return order[cs[i].Key] < order[cs[j].Key] })
}

// Fields lists the leaves that differ between two definitions. A locked
// definition that was stored without its body (nil) differs as a whole.
func Fields(old, now map[string]any) []FieldChange {
	var out []FieldChange
	diffValue("", old, now, &out)
	return out
}

func diffValue(path string, a, b any, out *[]FieldChange) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValue(p, am[k], bm[k], out)
		}
		return
	}
	if equalJSON(a, b) {
		return
	}
	if path == "" {
		path = "(definition)"
	}
	*out = append(*out, FieldChange{Path: path, Old: a, New: b})
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// String describes the change for a terminal or a CI log: which
// definition, and each value that changed, a text as its lines removed and
// added, any other value as JSON.
func (c Change) String() string {
	var b strings.Builder
	switch c.Status {
	case Added:
		fmt.Fprintf(&b, "%s: new (not in the lock)\n", c.Key)
		if c.Now != nil {
			writeDef(&b, c.Now.Definition)
		}
	case Removed:
		fmt.Fprintf(&b, "%s: removed (in the lock, no longer served)\n", c.Key)
	default:
		fmt.Fprintf(&b, "%s: changed\n", c.Key)
		if len(c.Fields) == 0 {
			fmt.Fprintf(&b, "  digest %s, locked %s (the lock does not hold the definition to compare)\n", c.Now.Digest, c.Locked.Digest)
		}
		for _, f := range c.Fields {
			writeField(&b, f)
		}
	}
	return b.String()
}

func writeDef(b *strings.Builder, def map[string]any) {
	names := make([]string, 0, len(def))
	for k := range def {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		writeField(b, FieldChange{Path: k, New: def[k]})
	}
}

func writeField(b *strings.Builder, f FieldChange) {
	oldS, oText := f.Old.(string)
	newS, nText := f.New.(string)
	multi := (oText && strings.Contains(oldS, "\n")) || (nText && strings.Contains(newS, "\n"))
	if (oText || f.Old == nil) && (nText || f.New == nil) && (multi || len(oldS)+len(newS) > 60) {
		fmt.Fprintf(b, "  %s:\n", f.Path)
		if f.Old != nil {
			for _, l := range strings.Split(oldS, "\n") {
				fmt.Fprintf(b, "    - %s\n", quoteHidden(l))
			}
		}
		if f.New != nil {
			for _, l := range strings.Split(newS, "\n") {
				fmt.Fprintf(b, "    + %s\n", quoteHidden(l))
			}
		}
		return
	}
	switch {
	case f.Old == nil:
		fmt.Fprintf(b, "  %s: added %s\n", f.Path, compact(f.New))
	case f.New == nil:
		fmt.Fprintf(b, "  %s: removed (was %s)\n", f.Path, compact(f.Old))
	default:
		fmt.Fprintf(b, "  %s: %s -> %s\n", f.Path, compact(f.Old), compact(f.New))
	}
}

// compact is v as one line of JSON, hidden characters escaped.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return quoteHidden(string(b))
}

// quoteHidden escapes what a terminal would not show as it is (control,
// format and bidi characters), so that a reviewer sees a hidden character
// as \u200b rather than nothing.
func quoteHidden(s string) string {
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r == 0xad, r >= 0x200b && r <= 0x200f, r >= 0x2028 && r <= 0x202e, r >= 0x2060 && r <= 0x206f,
		r == 0xfeff, r >= 0xfff9 && r <= 0xfffb, r >= 0xe0000 && r <= 0xe007f, r == 0x180e:
		return true
	}
	return false
}

// Approve returns locked with the current definitions of the changes
// accepted: a changed or new definition takes its current digest and
// body, a removed one leaves the lock. Definitions the changes do not name
// stay as they are.
func Approve(locked *File, changes []Change) *File {
	byKey := map[Key]Def{}
	if locked != nil {
		for _, d := range locked.Defs {
			byKey[d.Key()] = d
		}
	}
	for _, c := range changes {
		if c.Now == nil {
			delete(byKey, c.Key)
			continue
		}
		byKey[c.Key] = *c.Now
	}
	defs := make([]Def, 0, len(byKey))
	for _, d := range byKey {
		defs = append(defs, d)
	}
	return New(defs)
}
