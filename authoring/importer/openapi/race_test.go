//go:build race

package openapi_test

// raceEnabled: the race detector makes the conversion of GitHub's whole
// description take minutes; TestGitHub then converts only its sample.
const raceEnabled = true
