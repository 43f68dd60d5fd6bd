package listing

import "context"

// readOnlyKey marks a context whose listings leave the catalog as it is.
type readOnlyKey struct{}

// ReadOnly returns ctx for listings that write nothing: List under it
// serves the page by the same routes but skips the catalog's upkeep (the
// rewrite or root file Keep would write), so that a dry run leaves every
// file of the store as it found it. The next listing without it does the
// upkeep.
func ReadOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

// readOnly reports whether ctx came from ReadOnly.
func readOnly(ctx context.Context) bool {
	ro, _ := ctx.Value(readOnlyKey{}).(bool)
	return ro
}
