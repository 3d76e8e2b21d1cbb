//go:build race

package sqladapter

// raceEnabled: the race detector drops some of what sync.Pool is given,
// so lent buffers are not always reused and allocations are not measured.
const raceEnabled = true
