package linelog

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSplitter(t *testing.T) {
	long := strings.Repeat("x", 20)
	for _, tc := range []struct {
		name   string
		writes []string
		want   []string
	}{
		{"lines, CR dropped, blank lines skipped", []string{"one\n\n  \ntwo\r\nthree"}, []string{"one", "two", "three"}},
		{"split across writes", []string{"on", "e\ntw", "o\n"}, []string{"one", "two"}},
		{"a long line is cut, its rest skipped", []string{long[:7], long[7:] + "\nok\n"}, []string{long[:10] + " cut", "ok"}},
		{"invalid UTF-8 replaced", []string{"a\xffb\n"}, []string{"a\uFFFDb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			s := Splitter{Max: 10, Line: func(line string, cut bool) {
				if cut {
					line += " cut"
				}
				got = append(got, line)
			}}
			for _, w := range tc.writes {
				if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			s.Flush()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if cap(s.buf) > 64 {
				t.Errorf("buffered %d bytes", cap(s.buf))
			}
		})
	}
}

// A Limit lets its burst through, drops the rest, and reports how many:
// by Flush, or once its interval has passed.
func TestLimit(t *testing.T) {
	var mu sync.Mutex
	var reports []int64
	l := NewLimit(0.001, 3, time.Hour, func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, n)
	})
	allowed := 0
	for range 10 {
		if l.Allow() {
			allowed++
		}
	}
	if allowed != 3 {
		t.Errorf("%d allowed, want 3", allowed)
	}
	l.Flush()
	l.Flush() // nothing more to say
	if !reflect.DeepEqual(reports, []int64{7}) {
		t.Errorf("reports %v, want [7]", reports)
	}

	reported := make(chan int64, 1)
	l = NewLimit(0.001, 1, 10*time.Millisecond, func(n int64) { reported <- n })
	l.Allow()
	l.Allow()
	l.Allow()
	select {
	case n := <-reported:
		if n != 2 {
			t.Errorf("reported %d, want 2", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drops were never reported")
	}
}
