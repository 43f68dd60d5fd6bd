//go:build !race

package blobfile

// raceEnabled: the race detector drops pooled decoders at random, so
// what a read allocates is not the reader's alone under it.
const raceEnabled = false
