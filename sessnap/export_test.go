package sessnap

// The fast decoder and encoding/json's, for the tests that hold them to
// each other (fastdecode_test.go).
var (
	UnmarshalFast = unmarshalFast
	UnmarshalJSON = unmarshalJSON
	CheckFormat   = checkFormat
)

const ParallelMessageBytes = parallelMessageBytes

// UnmarshalElementsFast is the fast decoder of a conversation held as its
// elements (UnmarshalElements), for paged_test.go.
var UnmarshalElementsFast = unmarshalElementsFast
