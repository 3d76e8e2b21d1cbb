// Package redact replaces secret values in text that is about to reach a
// model. The secrets are the values a config read with env(), file() and
// filebase64() for its adapters and backends (see Set); a Redactor built
// from them at load time finds each one in the encodings text commonly
// carries it in:
//
//   - raw;
//   - JSON string escapes in any mix (\/, \", \\, \n, \u0041, surrogate
//     pairs), as PHP, Go and others write them;
//   - percent-encoding in any mix (%41, %2F), and url.QueryEscape (space as
//     +) and url.PathEscape forms;
//   - base64, standard and URL alphabets, padded or not, at any offset inside
//     a longer base64 text (the characters that depend only on the secret
//     are matched);
//   - hexadecimal, lower and upper case.
//
// One layer of encoding is undone, not nested ones (base64 of a JSON-escaped
// secret is not found), and transformed secrets (sliced, upper-cased,
// hashed) are not found. Each occurrence becomes Mark.
//
// The matcher is built once per load: every pattern is indexed by its first
// four bytes in a bit filter, so a scan is one shift, multiply and bit test
// per byte, and text without secrets is returned as it is, without
// allocating.
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mark replaces each secret found.
const Mark = "[redacted]"

// MinLen is the shortest value treated as a secret: shorter values (a "1"
// from env("DEBUG"), "true") would mangle unrelated text and reveal little.
const MinLen = 6

// MaxLen is the longest value treated as a secret. Longer values read with
// file() are templates or certificate bundles, not credentials; matching
// them would only cost memory.
const MaxLen = 16 << 10

// A Set collects the secret values of one load. It is safe for concurrent
// use; the zero value is empty and ready, and a nil *Set records nothing.
type Set struct {
	mu     sync.Mutex
	vals   map[string]struct{}
	cached *Redactor // nil when there is nothing to redact
	built  bool      // cached is up to date
}

// Add records v, without surrounding white space (a token file's final
// newline), unless it is shorter than MinLen or longer than MaxLen.
func (s *Set) Add(v string) {
	if s == nil {
		return
	}
	v = strings.TrimSpace(v)
	if len(v) < MinLen || len(v) > MaxLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vals[v]; ok {
		return
	}
	if s.vals == nil {
		s.vals = map[string]struct{}{}
	}
	s.vals[v] = struct{}{}
	s.built = false
}

// Len is the number of secrets recorded.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.vals)
}

// Values returns the values recorded, in no particular order.
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vals := make([]string, 0, len(s.vals))
	for v := range s.vals {
		vals = append(vals, v)
	}
	return vals
}

// Redactor returns the redactor of the values recorded so far, building it
// once per change. A nil or empty Set gives a nil Redactor, which changes
// nothing.
func (s *Set) Redactor() *Redactor {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.built {
		vals := make([]string, 0, len(s.vals))
		for v := range s.vals {
			vals = append(vals, v)
		}
		s.cached, s.built = New(vals), true
	}
	return s.cached
}

// A Redactor finds secrets in text and replaces them with Mark. It is
// immutable and safe for concurrent use. A nil *Redactor changes nothing.
type Redactor struct {
	// filter has a bit per hashed first four bytes of a pattern: sized for
	// about one pattern in 64 bits, so that most bytes of a text cost a
	// bit test and no map lookup.
	filter []uint64
	shift  uint32 // 32 - log2(len(filter)*64)
	maxLen int    // of the longest pattern
	// byGram holds the patterns by their first four bytes, longest first.
	byGram map[uint32][]string
}

func (r *Redactor) maybe(w uint32) bool {
	h := (w * 0x9E3779B1) >> r.shift
	return r.filter[h>>6]&(1<<(h&63)) != 0
}

// New builds a redactor for secrets; values outside [MinLen, MaxLen] are
// ignored. It returns nil when there is nothing to redact.
func New(secrets []string) *Redactor {
	var pats []string
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s) < MinLen || len(s) > MaxLen {
			continue
		}
		for _, p := range variants(s) {
			if len(p) >= 4 && !seen[p] {
				seen[p] = true
				pats = append(pats, p)
			}
		}
	}
	if len(pats) == 0 {
		return nil
	}
	bits := uint32(10) // 1024 bits at least, 65536 at most
	for bits < 16 && 1<<bits < 64*len(pats) {
		bits++
	}
	r := &Redactor{filter: make([]uint64, 1<<bits/64), shift: 32 - bits, byGram: map[uint32][]string{}}
	for _, p := range pats {
		r.maxLen = max(r.maxLen, len(p))
		w := uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3])
		h := (w * 0x9E3779B1) >> r.shift
		r.filter[h>>6] |= 1 << (h & 63)
		r.byGram[w] = append(r.byGram[w], p)
	}
	for _, ps := range r.byGram {
		slices.SortFunc(ps, func(a, b string) int { return len(b) - len(a) })
	}
	return r
}

// variants are the forms of s searched for literally. JSON escapes and
// arbitrary percent-encoding are handled by decoding while scanning.
func variants(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s)}
	if strings.Contains(s, "%") {
		// Decoding while scanning undoes percent-encodings too, so in the
		// JSON form of a secret that holds a literal "%41" it finds "A"
		// where the secret has "%41": search for the JSON encoders'
		// forms literally (Go's escapes <, > and & as well).
		for _, html := range []bool{false, true} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if enc.Encode(s) == nil {
				if j := strings.TrimSuffix(b.String(), "\n"); len(j) >= 2 {
					out = append(out, j[1:len(j)-1])
				}
			}
		}
	}
	h := hex.EncodeToString([]byte(s))
	out = append(out, h, strings.ToUpper(h))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		// The whole encoding, so that a standalone one goes entirely, and
		// the cores, for the secret inside a longer encoded text.
		out = append(out, enc.EncodeToString([]byte(s)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(s)))
		for k := 0; k < 3; k++ {
			out = append(out, base64Core(enc, s, k))
		}
	}
	return out
}

// base64Core is the part of the base64 encoding of s, preceded by k other
// bytes, whose characters depend on s alone: the secret at any offset of a
// longer base64 text contains the core for k = offset mod 3.
func base64Core(enc *base64.Encoding, s string, k int) string {
	b := make([]byte, k+len(s))
	copy(b[k:], s)
	e := enc.EncodeToString(b)
	from := (8*k + 5) / 6      // first character without bits of the k bytes
	to := 8 * (k + len(s)) / 6 // characters made of the secret's bits only
	return e[from:to]
}

// String returns s with every secret replaced by Mark. When s holds none it
// is returned as it is.
func (r *Redactor) String(s string) string {
	out, _ := r.str(s)
	return out
}

// str is String that also reports whether anything was replaced.
func (r *Redactor) str(s string) (string, bool) {
	if r == nil {
		return s, false
	}
	spans := findSpans(r, s)
	if len(spans) == 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.from])
		b.WriteString(Mark)
		last = sp.to
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// Bytes is String for a byte slice. When b holds no secret it is returned
// as it is; otherwise a new slice is returned and b is not modified.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	spans := findSpans(r, b)
	if len(spans) == 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	last := 0
	for _, sp := range spans {
		out = append(out, b[last:sp.from]...)
		out = append(out, Mark...)
		last = sp.to
	}
	return append(out, b[last:]...)
}

// Value redacts every string in a JSON-like value (maps, slices, strings),
// map keys included. The value is not modified: the maps and slices on the
// way to a change are copied, the rest is shared.
func (r *Redactor) Value(v any) any {
	if r == nil {
		return v
	}
	out, _ := r.value(v)
	return out
}

// value returns v itself (no new interface value, no allocation) when
// nothing in it changed.
func (r *Redactor) value(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int64, int32, uint64, json.Number:
		return v, false
	case string:
		if s, changed := r.str(x); changed {
			return s, true
		}
	case []byte:
		if len(findSpans(r, x)) > 0 {
			return r.Bytes(x), true
		}
	case map[string]any:
		if m, changed := redactMap(r, x, r.value); changed {
			return m, true
		}
	case []any:
		if s, changed := redactSlice(x, r.value); changed {
			return s, true
		}
	case []map[string]any:
		if s, changed := redactSlice(x, r.object); changed {
			return s, true
		}
	case map[string]string:
		if m, changed := redactMap(r, x, r.str); changed {
			return m, true
		}
	case []string:
		if s, changed := redactSlice(x, r.str); changed {
			return s, true
		}
	default:
		return r.reflectValue(v)
	}
	return v, false
}

func (r *Redactor) object(m map[string]any) (map[string]any, bool) {
	return redactMap(r, m, r.value)
}

// redactMap redacts the keys and, with f, the elements of m; m is copied on
// the first change, never modified.
func redactMap[V any](r *Redactor, m map[string]V, f func(V) (V, bool)) (map[string]V, bool) {
	var out map[string]V
	for k, e := range m {
		nk, keyChanged := r.str(k)
		ne, changed := f(e)
		if !changed && !keyChanged {
			continue
		}
		if out == nil {
			out = make(map[string]V, len(m))
			for k2, e2 := range m {
				out[k2] = e2
			}
		}
		delete(out, k)
		out[nk] = ne
	}
	if out == nil {
		return m, false
	}
	return out, true
}

// redactSlice redacts the elements of s with f; s is copied on the first
// change, never modified.
func redactSlice[V any](s []V, f func(V) (V, bool)) ([]V, bool) {
	var out []V
	for i, e := range s {
		ne, changed := f(e)
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(s)
		}
		out[i] = ne
	}
	if out == nil {
		return s, false
	}
	return out, true
}

// reflectValue handles any other composite value (a struct, a typed map) by
// its JSON form, which is what the client will see.
func (r *Redactor) reflectValue(v any) (any, bool) {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer, reflect.Interface:
	default:
		return v, false
	}
	b, err := json.Marshal(v)
	if err != nil || len(findSpans(r, b)) == 0 {
		return v, false
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return Mark, true
	}
	out, _ := r.value(generic)
	return out, true
}

// span is a half-open byte range [from, to) of the scanned text.
type span struct{ from, to int }

type text interface{ ~string | ~[]byte }

// findSpans finds every secret in s, in order, overlapping and adjacent
// finds merged. The raw scan always runs; the decoding scan only when s
// holds a backslash or a percent sign, which start the escapes it undoes.
func findSpans[T text](r *Redactor, s T) []span {
	if len(s) < 4 {
		return nil
	}
	spans, esc := rawSpans(r, s, nil)
	if esc {
		n := len(spans)
		spans = decodedSpans(r, s, spans)
		if n > 0 && len(spans) > n {
			slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
		}
	}
	return merge(spans)
}

func hasPrefixAt[T text](s T, at int, p string) bool {
	if len(s)-at < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if s[at+i] != p[i] {
			return false
		}
	}
	return true
}

// rawSpans finds the patterns as they are, and reports whether s holds a
// backslash or a percent sign, which start the escapes decodedSpans undoes.
func rawSpans[T text](r *Redactor, s T, spans []span) ([]span, bool) {
	var w uint32
	esc := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' || c == '%' {
			esc = true
		}
		w = w<<8 | uint32(c)
		if i < 3 || !r.maybe(w) {
			continue
		}
		from := i - 3
		for _, p := range r.byGram[w] {
			if hasPrefixAt(s, from, p) {
				spans = append(spans, span{from, from + len(p)})
				break
			}
		}
	}
	return spans, esc
}

// origin locates one decoded byte in the text: the escape (or plain byte)
// starting at off produced it, as its skip-th byte.
type origin struct{ off, skip int }

// decodedSpans finds the patterns in the text with its JSON escapes and
// percent-encodings undone, and reports them in the text's own offsets,
// covering whole escapes. A find without an escape in it is a raw find
// too, so only the regions around escapes are decoded: from maxLen-1 bytes
// before an escape to maxLen plain bytes after the last one.
func decodedSpans[T text](r *Redactor, s T, spans []span) []span {
	for i := 0; ; {
		e := nextEscape(s, i)
		if e < 0 {
			return spans
		}
		// From maxLen-1 bytes before e: plain bytes, as more than maxLen
		// plain bytes ended the previous region.
		spans, i = decodedRegion(r, s, max(0, e-r.maxLen+1), spans)
	}
}

func nextEscape[T text](s T, from int) int {
	for i := from; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '%' {
			return i
		}
	}
	return -1
}

// decodedRegion scans the decoded text from i, a boundary between escapes,
// until maxLen plain bytes have followed the last escape; it returns the
// finds and where it stopped, also a boundary.
func decodedRegion[T text](r *Redactor, s T, i int, spans []span) ([]span, int) {
	var (
		w     uint32
		n     int
		plain int
		ring  [4]origin
		buf   [utf8.UTFMax]byte
	)
	for i < len(s) {
		k, next := 1, i+1
		if c := s[i]; c == '\\' || c == '%' {
			k, next = decodeAt(s, i, &buf)
		} else {
			buf[0] = c
		}
		if next-i > 1 {
			plain = 0
		} else if plain++; plain > r.maxLen {
			return spans, i
		}
		for j := 0; j < k; j++ {
			w = w<<8 | uint32(buf[j])
			ring[n&3] = origin{i, j}
			n++
			if n < 4 || !r.maybe(w) {
				continue
			}
			start := ring[n&3] // the oldest of the last four
			for _, p := range r.byGram[w] {
				if end, ok := decodedPrefixAt(s, start, p); ok {
					spans = append(spans, span{start.off, end})
					break
				}
			}
		}
		i = next
	}
	return spans, i
}

// decodedPrefixAt reports whether the decoded text from start begins with
// p, and where in the text the escape holding p's last byte ends.
func decodedPrefixAt[T text](s T, start origin, p string) (int, bool) {
	var buf [utf8.UTFMax]byte
	i, skip, matched := start.off, start.skip, 0
	for i < len(s) {
		k, next := decodeAt(s, i, &buf)
		for j := skip; j < k; j++ {
			if buf[j] != p[matched] {
				return 0, false
			}
			matched++
			if matched == len(p) {
				return next, true
			}
		}
		skip = 0
		i = next
	}
	return 0, false
}

// decodeAt decodes the escape or byte at s[i] into buf, returning how many
// bytes it produced and where the next one starts. Escapes that are not
// well formed are left as they are.
func decodeAt[T text](s T, i int, buf *[utf8.UTFMax]byte) (int, int) {
	c := s[i]
	switch {
	case c == '\\' && i+1 < len(s):
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			buf[0] = e
			return 1, i + 2
		case 'b':
			buf[0] = '\b'
			return 1, i + 2
		case 'f':
			buf[0] = '\f'
			return 1, i + 2
		case 'n':
			buf[0] = '\n'
			return 1, i + 2
		case 'r':
			buf[0] = '\r'
			return 1, i + 2
		case 't':
			buf[0] = '\t'
			return 1, i + 2
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				break
			}
			next := i + 6
			if r >= 0xD800 && r < 0xDC00 { // a surrogate pair
				lo, ok := hex4(s, i+8)
				if !ok || s[i+6] != '\\' || s[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
					break
				}
				r, next = 0x10000+(r-0xD800)<<10+(lo-0xDC00), i+12
			} else if r >= 0xDC00 && r <= 0xDFFF {
				break
			}
			return utf8.EncodeRune(buf[:], r), next
		}
	case c == '%' && i+2 < len(s):
		if hi, ok := unhex(s[i+1]); ok {
			if lo, ok := unhex(s[i+2]); ok {
				buf[0] = hi<<4 | lo
				return 1, i + 3
			}
		}
	}
	buf[0] = c
	return 1, i + 1
}

func hex4[T text](s T, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	var r rune
	for i := at; i < at+4; i++ {
		v, ok := unhex(s[i])
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// merge joins overlapping and adjacent spans of a list sorted by start.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.from <= last.to {
			last.to = max(last.to, sp.to)
			continue
		}
		out = append(out, sp)
	}
	return out
}
