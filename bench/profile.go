package main

import (
	"os"
	"runtime/pprof"
)

// cpuProfile starts a CPU profile written to path (for go tool pprof);
// the returned stop ends it and closes the file.
func cpuProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
