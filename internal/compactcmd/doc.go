// Package compactcmd is the compact command, shared by cmd/compact and
// `sessions compact`: its flags, their validation, a compaction per
// session (jsonlstore's Store.Compact) with a progress bar on a terminal,
// and the report.
//
//	var f compactcmd.Flags
//	f.Register(fs)
//	ids, err := cli.Parse(fs, args)
//	policy, err := f.Policy()
//	code := compactcmd.Run(ctx, st, ids, f, stdout, stderr)
package compactcmd
