// Package toolhost is the seam between a directory store's facade
// (package jsonlstore) and the rooms that work on its sessions from
// outside a writer (package offline's backup and sync, package repair):
// the part of the facade both reach, which each room's own Host extends
// with what only it needs.
//
// It owns no file and no rule. It must never import the facade or a room
// that works through it.
package toolhost
