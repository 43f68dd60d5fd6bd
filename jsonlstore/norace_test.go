//go:build !race

package jsonlstore

// raceEnabled: see race_test.go.
const raceEnabled = false
