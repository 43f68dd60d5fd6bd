//go:build !linux

package main

import (
	"errors"
	"os"
)

// datasync makes f's data durable. Off Linux the store's platform sync
// differs (F_FULLFSYNC on macOS); f.Sync is Go's equivalent.
func datasync(f *os.File) error { return f.Sync() }

// fallocate is Linux only here; the prealloc workload uses pre-written
// space instead where it is missing.
func fallocate(*os.File, int64) error { return errors.New("fallocate: not supported on this platform") }

const canFallocate = false

func fsType(string) string { return "unknown (not Linux)" }
