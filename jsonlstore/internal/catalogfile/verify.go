package catalogfile

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
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

func notef(r *maintenance.CatalogVerifyReport, format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func problemf(r *maintenance.CatalogVerifyReport, format string, args ...any) {
	r.State = maintenance.CatalogDamaged
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// Verify checks the catalog (ROOT/.catalog/) against the sessions:
// that its bytes pass their checksums and decode; that every entry a
// listing would believe (its session has no mark) describes its session's
// log as it is and carries the summary the log gives; and, when its root
// file vouches that the catalog holds exactly the root's sessions, that
// it does. It reads only, takes no lock and no lease, and is safe while
// agents write and listings rewrite the catalog: what changes under it is
// looked at again, never reported as a problem. It costs a read of every
// session's latest revision. Errors: ctx's, a closed store, I/O that keeps
// it from reading the root or the marks.
func (c *Catalog) Verify(ctx context.Context) (maintenance.CatalogVerifyReport, error) {
	if c.host.Closed() {
		return maintenance.CatalogVerifyReport{}, sessionstore.ErrClosed
	}
	// A catalog replaced while it is checked is checked again: a few
	// times, since each replacement is a listing's that saw a change.
	for range 3 {
		rep, replaced, err := c.verifyOnce(ctx)
		if err != nil || !replaced {
			return rep, err
		}
	}
	return maintenance.CatalogVerifyReport{State: maintenance.CatalogStale, Notes: []string{"the catalog was rewritten during every check of it (a store being written): not checked"}}, nil
}

// verifyOnce checks the catalog on disk. replaced reports that it
// was replaced during the check, whose findings are then void.
func (c *Catalog) verifyOnce(ctx context.Context) (rep maintenance.CatalogVerifyReport, replaced bool, err error) {
	rep.State = maintenance.CatalogCurrent
	// As a listing looks: the root, the marks, then the catalog (see
	// the listing package).
	rootFi, err := c.root.FS.Lstat(".")
	if err != nil {
		return rep, false, fmt.Errorf("jsonlstore: verify catalog: %w", err)
	}
	root := DirStateOf(rootFi)
	if c.kindProblems(&rep) {
		return rep, false, nil
	}
	marks, err := c.ReadMarks()
	if err != nil {
		return rep, false, fmt.Errorf("jsonlstore: verify catalog: %w", err)
	}
	f, state, err := c.readFile()
	switch {
	case errors.Is(err, vfs.ErrReplaced):
		return rep, true, nil
	case errors.Is(err, ErrNoCatalog):
		rep.State = maintenance.CatalogMissing
		notef(&rep, "no catalog: listings read every session until one writes it")
		return rep, false, nil
	case errors.Is(err, catalog.ErrNewer):
		rep.State = maintenance.CatalogNewer
		notef(&rep, "the catalog was written by a newer version of sessionstore: listings read the sessions and leave it to that version")
		return rep, false, nil
	case errors.Is(err, catalog.ErrDamaged):
		problemf(&rep, "%s: %v; listings read the sessions meanwhile, and the next one (or a reindex) rebuilds it", Path, err)
		return rep, false, nil
	case err != nil:
		return rep, false, fmt.Errorf("jsonlstore: verify catalog: %w", err)
	}
	// If the file was replaced after it was read, what follows may compare
	// an old catalog with newer logs.
	stillThere := func() bool {
		fi, err := c.root.FS.Lstat(Path)
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
			problemf(&rep, "%s: %v", Path, err)
		case !e.ValidID():
			problemf(&rep, "%s: %v: entry %d names %q, not a session ID", Path, catalog.ErrDamaged, i, e.ID)
		case e.Unreadable:
			ents[i] = e
			continue
		default:
			ents[i] = e
			if sums[i], err = EntrySummary(f, i); err == nil {
				continue
			}
			problemf(&rep, "%s: %v", Path, err)
		}
		bad = true
	}
	if bad {
		rep.Problems[len(rep.Problems)-1] += "; listings read the sessions meanwhile, and the next one (or a reindex) rebuilds it"
		return rep, !stillThere(), nil
	}

	if !marks.Trusts(f) || !c.DirWritable() {
		rep.State = maintenance.CatalogStale
		notef(&rep, "listings do not believe the catalog (its marks directory is not the one it was written against, lacks a mark it kept, or may not be written to): the next listing that can rebuilds it")
		return rep, !stillThere(), nil
	}

	// The root's sessions beside the catalog's.
	names, _, err := c.rootNames()
	if err != nil {
		return rep, false, err
	}
	onDisk := make(map[session.SessionID]bool, len(names))
	var unknown []session.SessionID
	for _, id := range names {
		onDisk[id] = true
		if f.Find(id) < 0 {
			if _, err := logfile.StatLog(c.root, id); errors.Is(err, sessionstore.ErrNotFound) {
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
		r, rok := c.ReadRoot()
		hidden := false
		if c.RootTrusted(r, rok, f, root) && len(unknown) > 0 {
			// Listings believe that the catalog holds every session: those
			// it lacks are hidden, unless the root changed since it was
			// looked at (a creation during the check).
			if fi, err := c.root.FS.Lstat("."); err == nil && DirStateOf(fi) == root && stillThere() {
				hidden = true
				problemf(&rep, "%s vouches that the catalog holds every session, but it lacks %s: listings that believe it do not show them until the root changes; `sessions reindex` rebuilds the catalog and the root file", RootPath, idList(unknown))
			}
		}
		if len(unknown) > 0 && !hidden {
			notef(&rep, "%d sessions not in the catalog yet (%s): listings read them until the next rewrite", len(unknown), idList(unknown))
		}
		if gone > 0 {
			notef(&rep, "%d entries of sessions since deleted: listings skip them until the next rewrite", gone)
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
		if e.Unreadable || len(marks.Gens[e.ID]) > 0 || !onDisk[e.ID] {
			return nil // listings read the session itself
		}
		fi, err := logfile.StatLog(c.root, e.ID)
		if errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil // deleted during the check
		}
		if err != nil {
			return nil //nolint:nilerr // unreadable now: the sessions' verification reports it
		}
		if LogStateOf(fi) != e.Log {
			found[i].problem = c.recheck(e.ID, marks, "its log is not as its entry says, and the session has no mark: a program that does not keep the catalog wrote it, or it was edited by hand; a listing that shows it rebuilds the catalog")
			return nil
		}
		sum, st, err := c.fromLog(ctx, e.ID)
		switch {
		case logfile.EndsStoreWide(err):
			return err
		case err != nil:
			return nil //nolint:nilerr // the sessions' verification reports it
		case st != e.Log:
			found[i].problem = c.recheck(e.ID, marks, "its log changed during the check without a mark")
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
			problemf(&rep, "session %s: %s", ents[i].ID, found[i].problem)
		}
	}
	return rep, false, nil
}

// kindProblems reports as problems what stands where the catalog
// keeps its directory, lock, marks, file or root file but is not of the
// kind the store keeps there (a FIFO, a symlink, a file for a directory):
// listings cannot use it, and `sessions reindex` sets it aside
// (setAsideCatalogDamage). It reports whether it found any.
func (c *Catalog) kindProblems(rep *maintenance.CatalogVerifyReport) bool {
	const after = "listings answer without it meanwhile, and `sessions reindex` sets it aside and rebuilds the catalog"
	fi, err := c.root.FS.Lstat(Dir)
	if err != nil {
		return false // missing (a listing writes it), or unreadable: the checks that follow say
	}
	if what := wrongKind(fi, true); what != "" {
		problemf(rep, "%s is %s, not the catalog's directory: %s", Dir, what, after)
		return true
	}
	for _, k := range catalogKinds {
		name := Dir + "/" + k.name
		if fi, err := c.root.FS.Lstat(name); err == nil {
			if what := wrongKind(fi, k.dir); what != "" {
				problemf(rep, "%s is %s: %s", name, what, after)
			}
		}
	}
	return len(rep.Problems) > 0
}

// recheck returns problem for session id, unless a mark of it came since
// marks were read (a holder began writing it during the check): then "".
func (c *Catalog) recheck(id session.SessionID, marks MarkSet, problem string) string {
	if now, err := c.ReadMarks(); err != nil || len(now.Gens[id]) > len(marks.Gens[id]) {
		return ""
	}
	return problem
}

// readFile decodes the catalog on disk afresh (not the cached
// one), with the state of the file it read.
func (c *Catalog) readFile() (*catalog.File, vfs.State, error) {
	f, st, err := c.openFile()
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
