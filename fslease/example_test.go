package fslease_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sessionstore/sessionstore/fslease"
)

// Acquire a lease, see that others are kept out and that readers see it
// held, then release it.
func ExampleAcquire() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fslease-example")
	defer os.RemoveAll(dir)

	l, err := fslease.Acquire(ctx, dir, fslease.Options{Label: "agent-cli"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("generation", l.Generation(), "previous", l.PreviousState())

	_, err = fslease.TryAcquire(ctx, dir, fslease.Options{})
	fmt.Println("second acquirer held out:", errors.Is(err, fslease.ErrHeld))

	st, _ := fslease.Inspect(ctx, dir)
	fmt.Println("inspect:", st.State, st.Record.Owner.Label)

	if err := l.Check(); err != nil { // before each protected write
		fmt.Println(err)
	}
	_ = l.Release(ctx)

	st, _ = fslease.Inspect(ctx, dir)
	fmt.Println("inspect:", st.State)

	l, _ = fslease.Acquire(ctx, dir, fslease.Options{})
	fmt.Println("generation", l.Generation(), "previous", l.PreviousState())
	_ = l.Release(ctx)

	// Output:
	// generation 1 previous none
	// second acquirer held out: true
	// inspect: held agent-cli
	// inspect: free
	// generation 2 previous released
}
