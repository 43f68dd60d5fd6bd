package importer

// Scan and CompactTo are the scanner's, for the tests that hold it to
// encoding/json.
var (
	Scan      = scan
	CompactTo = compactTo
)
