// Package sessiontest builds sessions and their snapshots for tests across
// packages: one fixed builder for each lifecycle state, a deterministic
// random walk through legal transitions, and Snap, the one way tests turn
// a session into a snapshot.
package sessiontest
