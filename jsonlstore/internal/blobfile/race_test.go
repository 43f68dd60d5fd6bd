//go:build race

package blobfile

// raceEnabled: see norace_test.go.
const raceEnabled = true
