package main

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/sessionstore/sessionstore/internal/cli"
)

// countBar is the progress bar of a command that goes through sessions
// one by one (backup, sync), on stderr when it is a terminal; it does
// nothing otherwise, and appears only once a run has lasted a moment.
type countBar struct {
	out   io.Writer
	what  string
	start time.Time
	pb    *progressbar.ProgressBar
}

func newCountBar(stderr io.Writer, what string) *countBar {
	if !cli.IsTerminal(stderr) {
		return &countBar{}
	}
	return &countBar{out: stderr, what: what, start: time.Now()}
}

// update is the library's Progress callback.
func (b *countBar) update(done, total int) {
	if b.out == nil {
		return
	}
	if b.pb == nil {
		if time.Since(b.start) < time.Second {
			return // a short run: no bar
		}
		b.pb = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(b.out),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetDescription(b.what),
		)
	}
	_ = b.pb.Set(done)
}

func (b *countBar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
