// Package sizes is the arithmetic of mcpd's bounds on what one call may
// build: sizes added and multiplied without overflowing, worked out before
// anything is allocated (Go cannot recover from running out of memory),
// and said in words a model can act on. The expr built-ins (engine/shape),
// the HCL functions (engine/funcs) and call-time for expressions
// (engine/adapter) share it, so that one limit reads the same everywhere.
package sizes

import "fmt"

// MaxBuilt is how much text (or array) one call may build with any one of
// those means: 16 MiB, sixteen times the default output cap.
const MaxBuilt = 16 << 20

// Add is a+b, or -1 when either is -1 or the sum overflows: a bound that
// is -1 is always refused.
func Add(a, b int) int {
	if a < 0 || b < 0 || a > 1<<62-b {
		return -1
	}
	return a + b
}

// Mul is a*b, or -1 when either is -1 or the product overflows.
func Mul(a, b int) int {
	if a < 0 || b < 0 || (a != 0 && b > (1<<62)/a) {
		return -1
	}
	return a * b
}

// Text says n bytes in words; -1 (an overflow) is "more than 8 EiB".
func Text(n int) string {
	switch {
	case n < 0:
		return "more than 8 EiB"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
