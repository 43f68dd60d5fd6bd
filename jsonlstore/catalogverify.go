package jsonlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// CatalogState is what VerifyCatalog found the catalog to be.
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

// CatalogVerifyReport is what VerifyCatalog found.
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

func (r *CatalogVerifyReport) notef(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *CatalogVerifyReport) problemf(format string, args ...any) {
	r.State = CatalogDamaged
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// VerifyCatalog checks the catalog (ROOT/.catalog/) against the sessions:
// that its bytes pass their checksums and decode; that every entry a
// listing would believe (its session has no mark) describes its session's
// log as it is and carries the summary the log gives; and, when its root
// file vouches that the catalog holds exactly the root's sessions, that
// it does. It reads only, takes no lock and no lease, and is safe while
// agents write and listings rewrite the catalog: what changes under it is
// looked at again, never reported as a problem. It costs a read of every
// session's latest revision. Errors: ctx's, a closed store, I/O that keeps
// it from reading the root or the marks.
func (s *Store) VerifyCatalog(ctx context.Context) (CatalogVerifyReport, error) {
	if s.closed.Load() {
		return CatalogVerifyReport{}, sessionstore.ErrClosed
	}
	// A catalog replaced while it is checked is checked again: a few
	// times, since each replacement is a listing's that saw a change.
	for range 3 {
		rep, replaced, err := s.verifyCatalogOnce(ctx)
		if err != nil || !replaced {
			return rep, err
		}
	}
	return CatalogVerifyReport{State: CatalogStale, Notes: []string{"the catalog was rewritten during every check of it (a store being written): not checked"}}, nil
}

// verifyCatalogOnce checks the catalog on disk. replaced reports that it
// was replaced during the check, whose findings are then void.
func (s *Store) verifyCatalogOnce(ctx context.Context) (rep CatalogVerifyReport, replaced bool, err error) {
	rep.State = CatalogCurrent
	// As a listing looks: the root, the marks, then the catalog (see
	// listCatalog).
	rootFi, err := s.fs.Lstat(".")
	if err != nil {
		return rep, false, fmt.Errorf("jsonlstore: verify catalog: %w", err)
	}
	root := dirStateOf(rootFi)
	if s.catalogKindProblems(&rep) {
		return rep, false, nil
	}
	marks, err := s.readMarks()
	if err != nil {
		return rep, false, fmt.Errorf("jsonlstore: verify catalog: %w", err)
	}
	f, state, err := s.readCatalogFile()
	switch {
	case errors.Is(err, vfs.ErrReplaced):
		return rep, true, nil
	case errors.Is(err, errNoCatalog):
		rep.State = CatalogMissing
		rep.notef("no catalog: listings read every session until one writes it")
		return rep, false, nil
	case errors.Is(err, catalog.ErrNewer):
		rep.State = CatalogNewer
		rep.notef("the catalog was written by a newer version of sessionstore: listings read the sessions and leave it to that version")
		return rep, false, nil
	case errors.Is(err, catalog.ErrDamaged):
		rep.problemf("%s: %v; listings read the sessions meanwhile, and the next one (or a reindex) rebuilds it", catalogFile, err)
		return rep, false, nil
	case err != nil:
		return rep, false, fmt.Errorf("jsonlstore: verify catalog: %w", err)
	}
	// If the file was replaced after it was read, what follows may compare
	// an old catalog with newer logs.
	stillThere := func() bool {
		fi, err := s.fs.Lstat(catalogFile)
		return err == nil && vfs.StateOf(fi) == state
	}
	rep.Entries = f.Len()

	// The bytes: every entry decodes, names a valid ID, and carries a
	// summary that passes its checksum and agrees with the entry.
	sums := make([]summary.Summary, f.Len())
	ents := make([]catalog.Entry, f.Len())
	bad := false
	for i := range f.Len() {
		e, err := f.Entry(i)
		switch {
		case err != nil:
			rep.problemf("%s: %v", catalogFile, err)
		case !e.ValidID():
			rep.problemf("%s: %v: entry %d names %q, not a session ID", catalogFile, catalog.ErrDamaged, i, e.ID)
		case e.Unreadable:
			ents[i] = e
			continue
		default:
			ents[i] = e
			if sums[i], err = entrySummary(f, i); err == nil {
				continue
			}
			rep.problemf("%s: %v", catalogFile, err)
		}
		bad = true
	}
	if bad {
		rep.Problems[len(rep.Problems)-1] += "; listings read the sessions meanwhile, and the next one (or a reindex) rebuilds it"
		return rep, !stillThere(), nil
	}

	if !marks.trusts(f) || !s.catalogDirWritable() {
		rep.State = CatalogStale
		rep.notef("listings do not believe the catalog (its marks directory is not the one it was written against, lacks a mark it kept, or may not be written to): the next listing that can rebuilds it")
		return rep, !stillThere(), nil
	}

	// The root's sessions beside the catalog's.
	names, _, err := s.rootNames()
	if err != nil {
		return rep, false, err
	}
	onDisk := make(map[session.SessionID]bool, len(names))
	var unknown []session.SessionID
	for _, id := range names {
		onDisk[id] = true
		if f.Find(id) < 0 {
			if _, err := logfile.StatLog(s.root, id); errors.Is(err, sessionstore.ErrNotFound) {
				continue // a directory that holds no session: nobody lists it
			}
			unknown = append(unknown, id)
		}
	}
	gone := 0
	for i := range f.Len() {
		if !onDisk[ents[i].ID] {
			gone++
		}
	}
	if len(unknown) > 0 || gone > 0 {
		r, rok := s.readCatalogRoot()
		hidden := false
		if rootTrusted(r, rok, f.ID, root) && len(unknown) > 0 {
			// Listings believe that the catalog holds every session: those
			// it lacks are hidden, unless the root changed since it was
			// looked at (a creation during the check).
			if fi, err := s.fs.Lstat("."); err == nil && dirStateOf(fi) == root && stillThere() {
				hidden = true
				rep.problemf("%s vouches that the catalog holds every session, but it lacks %s: listings that believe it do not show them until the root changes; `sessions reindex` rebuilds the catalog and the root file", catalogRootFile, idList(unknown))
			}
		}
		if len(unknown) > 0 && !hidden {
			rep.notef("%d sessions not in the catalog yet (%s): listings read them until the next rewrite", len(unknown), idList(unknown))
		}
		if gone > 0 {
			rep.notef("%d entries of sessions since deleted: listings skip them until the next rewrite", gone)
		}
	}

	// Every entry a listing believes, against its log.
	type finding struct {
		problem string
		checked bool
	}
	found := make([]finding, f.Len())
	err = layout.Parallel(ctx, f.Len(), func(i int) error {
		e := &ents[i]
		if e.Unreadable || len(marks.gens[e.ID]) > 0 || !onDisk[e.ID] {
			return nil // listings read the session itself
		}
		fi, err := logfile.StatLog(s.root, e.ID)
		if errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil // deleted during the check
		}
		if err != nil {
			return nil //nolint:nilerr // unreadable now: the sessions' verification reports it
		}
		if logStateOf(fi) != e.Log {
			found[i].problem = s.recheck(e.ID, marks, "its log is not as its entry says, and the session has no mark: a program that does not keep the catalog wrote it, or it was edited by hand; a listing that shows it rebuilds the catalog")
			return nil
		}
		sum, st, err := s.summaryFromLog(ctx, e.ID)
		switch {
		case logfile.EndsStoreWide(err):
			return err
		case err != nil:
			return nil //nolint:nilerr // the sessions' verification reports it
		case st != e.Log:
			found[i].problem = s.recheck(e.ID, marks, "its log changed during the check without a mark")
			return nil
		}
		found[i].checked = true
		if diff := entryDiff(e, &sums[i], sum); diff != "" {
			found[i].problem = "its entry says " + diff + ", where its log (as the entry describes it) says otherwise: listings that show it misreport it"
		}
		return nil
	})
	if err != nil {
		return rep, false, err
	}
	if !stillThere() {
		return rep, true, nil
	}
	for i := range found {
		if found[i].checked {
			rep.Checked++
		}
		if found[i].problem != "" {
			rep.problemf("session %s: %s", ents[i].ID, found[i].problem)
		}
	}
	return rep, false, nil
}

// catalogKindProblems reports as problems what stands where the catalog
// keeps its directory, lock, marks, file or root file but is not of the
// kind the store keeps there (a FIFO, a symlink, a file for a directory):
// listings cannot use it, and `sessions reindex` sets it aside
// (setAsideCatalogDamage). It reports whether it found any.
func (s *Store) catalogKindProblems(rep *CatalogVerifyReport) bool {
	const after = "listings answer without it meanwhile, and `sessions reindex` sets it aside and rebuilds the catalog"
	fi, err := s.fs.Lstat(CatalogDir)
	if err != nil {
		return false // missing (a listing writes it), or unreadable: the checks that follow say
	}
	if what := wrongKind(fi, true); what != "" {
		rep.problemf("%s is %s, not the catalog's directory: %s", CatalogDir, what, after)
		return true
	}
	for _, k := range catalogKinds {
		name := CatalogDir + "/" + k.name
		if fi, err := s.fs.Lstat(name); err == nil {
			if what := wrongKind(fi, k.dir); what != "" {
				rep.problemf("%s is %s: %s", name, what, after)
			}
		}
	}
	return len(rep.Problems) > 0
}

// recheck returns problem for session id, unless a mark of it came since
// marks were read (a holder began writing it during the check): then "".
func (s *Store) recheck(id session.SessionID, marks markSet, problem string) string {
	if now, err := s.readMarks(); err != nil || len(now.gens[id]) > len(marks.gens[id]) {
		return ""
	}
	return problem
}

// readCatalogFile decodes the catalog on disk afresh (not the Store's
// cached one), with the state of the file it read.
func (s *Store) readCatalogFile() (*catalog.File, vfs.State, error) {
	f, st, err := s.openCatalogFile()
	if err != nil {
		return nil, vfs.State{}, err
	}
	defer func() { _ = f.Close() }() // read-only
	b := make([]byte, st.Size)
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		return nil, vfs.State{}, err
	}
	cf, err := catalog.Decode(bytes.NewReader(b), int64(len(b)))
	return cf, st, err
}

// entryDiff says where entry e and its summary esum differ from sum,
// the summary its log gives (the lease is never in a catalog), or "".
func entryDiff(e *catalog.Entry, esum *summary.Summary, sum summary.Summary) string {
	switch {
	case e.Revision != sum.Revision:
		return fmt.Sprintf("revision %d (the log: %d)", e.Revision, sum.Revision)
	case !e.Updated.Equal(sum.UpdatedAt) || !e.Created.Equal(sum.CreatedAt):
		return fmt.Sprintf("updated %s, created %s", e.Updated, e.Created)
	case e.State != sum.State || e.Kind != sum.Kind || e.ParentID != sum.ParentID:
		return fmt.Sprintf("state %q, kind %q, parent %q", e.State, e.Kind, e.ParentID)
	case e.Project != sum.Project || !maps.Equal(e.Labels(), sum.Labels):
		return "another project or other labels"
	}
	sum.Lease = summary.LeaseStatus{}
	a, err1 := json.Marshal(esum)
	b, err2 := json.Marshal(normalJSON(sum))
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return "another summary"
	}
	return ""
}

// normalJSON is sum as a round trip through JSON makes it (times in the
// form they decode to), to compare with a summary decoded from JSON.
func normalJSON(sum summary.Summary) summary.Summary {
	b, err := json.Marshal(sum)
	if err != nil {
		return sum
	}
	var out summary.Summary
	if json.Unmarshal(b, &out) != nil {
		return sum
	}
	return out
}

// idList names up to five sessions of ids.
func idList(ids []session.SessionID) string {
	const most = 5
	var b bytes.Buffer
	for i, id := range ids {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(ids)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(id))
	}
	return b.String()
}
