package sqladapter

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxCellWidth caps the characters of one cell in the text table; longer
// values end with "…" (the structured result has them whole).
const maxCellWidth = 40

var cellEscaper = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)

// textTable renders rows as an aligned text table:
//
//	id | title | year
//	---+-------+-----
//	 1 | Dune  | 1965
//	(1 row)
func textTable(columns []string, rows []any, truncated, overBytes bool, maxBytes int) string {
	cells := make([][]string, len(rows))
	numeric := make([]bool, len(columns)) // right-aligned: every value a number
	for i := range numeric {
		numeric[i] = len(rows) > 0
	}
	widths := make([]int, len(columns))
	for i, c := range columns {
		widths[i] = utf8.RuneCountInString(c)
	}
	for r, row := range rows {
		m := row.(map[string]any)
		cells[r] = make([]string, len(columns))
		for i, c := range columns {
			v := m[c]
			switch v.(type) {
			case int64, float64, nil:
			default:
				numeric[i] = false
			}
			s := cellText(v)
			cells[r][i] = s
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}

	var b strings.Builder
	line := func(vals []string, right []bool) {
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v))
			if right != nil && right[i] {
				b.WriteString(pad + v)
			} else if i == len(vals)-1 {
				b.WriteString(v) // no trailing spaces
			} else {
				b.WriteString(v + pad)
			}
		}
		b.WriteByte('\n')
	}
	line(columns, nil)
	for i, w := range widths {
		if i > 0 {
			b.WriteString("-+-")
		}
		b.WriteString(strings.Repeat("-", w))
	}
	b.WriteByte('\n')
	for _, row := range cells {
		line(row, numeric)
	}
	switch {
	case overBytes:
		b.WriteString("(" + plural(len(rows), "row") + " shown; the result was cut at max_bytes (" + byteSize(maxBytes) +
			"), and a value that did not fit ends with …. Select fewer or shorter columns (substr() of long text), or fewer rows (WHERE, LIMIT))")
	case truncated:
		b.WriteString("(" + plural(len(rows), "row") + " shown; the query returned more, cut at max_rows)")
	default:
		b.WriteString("(" + plural(len(rows), "row") + ")")
	}
	return b.String()
}

// cellText is one value as table text, on one line and capped in width.
func cellText(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		s = cellEscaper.Replace(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	default:
		j, _ := json.Marshal(x)
		s = string(j)
	}
	if utf8.RuneCountInString(s) > maxCellWidth {
		r := []rune(s)
		s = string(r[:maxCellWidth-1]) + "…"
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// byteSize is n bytes in words: "1 MiB", "64 KiB", "1500 bytes".
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return plural(n, "byte")
}
