package main

import "strings"

// packagePrefixes are the names the library's packages start their error
// texts with ("sessionstore: not found"), as Go's convention asks of a
// library. A user of the command is not told which package an error came
// from: the command's own name starts the line.
var packagePrefixes = []string{"sessionstore: ", "jsonlstore: ", "fslease: ", "pgstore: ", "memstore: ", "summary: ", "sessnap: ", "session: ", "importer: ", "vfs: "}

// errorText is err's text as the command prints it: without the package
// prefixes at the start of each of its ": "-separated parts.
// "sessionstore: not found: session NOPE" reads "not found: session NOPE".
func errorText(err error) string {
	msg := err.Error()
	var b strings.Builder
	for part := range strings.SplitAfterSeq(msg, ": ") {
		for _, p := range packagePrefixes {
			if part == p {
				part = ""
				break
			}
		}
		b.WriteString(part)
	}
	return b.String()
}
