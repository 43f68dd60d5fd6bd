package fslease

import (
	"os"
	"sync"
)

// processIdentity is the part of Identity that is fixed for the life of the
// process, computed once.
var processIdentity = sync.OnceValue(func() Identity {
	host, _ := os.Hostname() // "" if unknown: identity is for people only
	pid := os.Getpid()
	start, ticks, boot := platformIdentity(pid)
	return Identity{
		Host:          host,
		PID:           pid,
		PIDStart:      start,
		PIDStartTicks: ticks,
		BootID:        boot,
	}
})

// newIdentity returns this process's identity with a fresh nonce and the
// caller's label.
func newIdentity(label string) Identity {
	id := processIdentity()
	id.Nonce = randomHex(16)
	id.Label = label
	return id
}
