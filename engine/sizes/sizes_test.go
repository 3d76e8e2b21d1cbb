package sizes

import "testing"

func TestArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  int
		want int
	}{
		{"add", Add(2, 3), 5},
		{"add of an overflow", Add(-1, 3), -1},
		{"add overflowing", Add(1<<62, 1<<62), -1},
		{"mul", Mul(1<<20, 16), MaxBuilt},
		{"mul by zero", Mul(0, 1<<62), 0},
		{"mul overflowing", Mul(1<<40, 1<<40), -1},
		{"mul of an overflow", Mul(-1, 2), -1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	for n, want := range map[int]string{
		-1:       "more than 8 EiB",
		512:      "512 bytes",
		1536:     "1.5 KiB",
		MaxBuilt: "16.0 MiB",
		3 << 30:  "3.0 GiB",
	} {
		if got := Text(n); got != want {
			t.Errorf("Text(%d) = %q, want %q", n, got, want)
		}
	}
}
