package maintenance

import "time"

// CatalogReport is what a rewrite of a directory store's catalog did
// (jsonlstore's Store.Reindex).
type CatalogReport struct {
	// Sessions is the number of entries written, Read the number of them
	// read from their sessions (the others were taken from the previous
	// catalog), Unreadable those that could not be read.
	Sessions   int `json:"sessions"`
	Read       int `json:"read"`
	Unreadable int `json:"unreadable"`
	// MarksRemoved and MarksKept count the marks let go and those left in
	// place (their sessions were held, or being created).
	MarksRemoved int `json:"marks_removed"`
	MarksKept    int `json:"marks_kept"`
	// RootFile says whether the root file was written (the root had not
	// changed for two seconds, so that it was settled).
	RootFile bool          `json:"root_file"`
	Duration time.Duration `json:"duration_ns"`
	// SetAside names (relative to the root) what Reindex moved out of
	// the way before it rebuilt the catalog: entries where the catalog
	// keeps its directory, lock, marks, file or root file that were not of
	// the kind it keeps there.
	SetAside []string `json:"set_aside,omitempty"`
}

// CatalogState is what a check of the catalog found it to be
// (jsonlstore's Store.VerifyCatalog).
type CatalogState string

// The states of a catalog. Only CatalogDamaged is a problem: the others
// are what a cache may be, and listings answer correctly in each.
const (
	// CatalogCurrent: listings believe the catalog, and it is right.
	CatalogCurrent CatalogState = "current"
	// CatalogMissing: there is no catalog; listings read every session
	// until one writes it.
	CatalogMissing CatalogState = "missing"
	// CatalogStale: listings do not believe the catalog (its marks
	// directory was replaced or lost a mark, or its owner may not write
	// to it); the next listing that can rebuilds it.
	CatalogStale CatalogState = "stale"
	// CatalogNewer: a newer program wrote the catalog; this one lists
	// without it and leaves it alone.
	CatalogNewer CatalogState = "newer"
	// CatalogDamaged: the catalog's bytes are not a whole catalog, or it
	// claims what a log contradicts. Problems say what.
	CatalogDamaged CatalogState = "damaged"
)

// CatalogVerifyReport is what a check of the catalog found
// (jsonlstore's Store.VerifyCatalog).
type CatalogVerifyReport struct {
	State CatalogState `json:"state"`
	// Entries is the number of entries of the catalog, Checked the number
	// compared with their sessions' logs. The others are of sessions that
	// are being written (marked) or could not be read when the entry was
	// made: listings read those sessions themselves.
	Entries int `json:"entries"`
	Checked int `json:"checked"`
	// Notes are what is expected of a cache: sessions it does not know yet,
	// entries of sessions since deleted, why listings do not believe it.
	Notes []string `json:"notes,omitempty"`
	// Problems are what no correct program leaves: bytes that fail their
	// checks, an entry a listing would believe that its log contradicts,
	// a session hidden from listings that believe the catalog.
	Problems []string `json:"problems,omitempty"`
}

// OK reports whether the catalog has no problem.
func (r *CatalogVerifyReport) OK() bool { return len(r.Problems) == 0 }
