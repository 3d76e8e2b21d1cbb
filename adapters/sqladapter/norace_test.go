//go:build !race

package sqladapter

const raceEnabled = false
