package listing

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The scan: the route a listing takes when neither the watcher's index
// nor the catalog can answer (listing.go chooses). Every session's
// summary.json is read and checked against a stat of its log, but only
// the fields a filter or an order needs are decoded; the page is selected
// from those, and only its items are then read in full and checked as
// logfile.Current checks them.
//
// Why ranking by (identity, size) alone is sound: the holder writes
// summary.json after an append is durable, naming the log's identity and
// size after it. A log of one identity only grows, except when recovery
// truncates an uncommitted tail — bytes after every committed record, so
// after every record a summary names (a damaged record that a summary
// vouches for is corruption, never a tail) — and when repair cuts it,
// which moves summary.json aside, durably, first. So a summary whose
// identity and size are those of the log describes the log's last record.
// The revision check logfile.Current adds costs opening the log; it guards
// against what the protocol excludes (a summary planted next to a log that
// reuses an inode number and has its size), and it is still made for
// every item List returns: a page item that fails it is recomputed from
// the log and the page selected again.

// scanned is one session as Scan sees it.
type scanned struct {
	id session.SessionID
	// sum is the full summary when checked, else only the fields that
	// filters and orders read (summaryKeys.ranked).
	sum     summary.Summary
	listed  bool  // false: gone, or unreadable
	bad     error // why it is unreadable (a damaged log, a permission error); nil otherwise
	checked bool  // sum was checked as logfile.Current checks it
}

// Scan answers q by reading every session's summary from disk.
func (l *Lister) Scan(ctx context.Context, q summary.Query) (summary.Page, error) {
	var all []scanned
	sel, err := summary.NewSelection(q, func(i int) *summary.Summary { return &all[i].sum })
	if err != nil {
		return summary.Page{}, err
	}
	ids, err := layout.SessionIDs(l.root.FS)
	if err != nil {
		return summary.Page{}, err
	}
	all = make([]scanned, len(ids))
	err = layout.Parallel(ctx, len(ids), func(i int) error {
		var err error
		all[i], err = l.scanSession(ctx, ids[i])
		return err
	})
	if err != nil {
		return summary.Page{}, err
	}
	// Select, then check the selection; a checked item whose rank changed
	// (or that vanished) changes the selection: select again. Each round
	// checks at least one more session, and checked ones stay checked.
	for {
		sel.Reset(len(all))
		for i := range all {
			if all[i].listed {
				sel.Offer(i)
			}
		}
		kept := sel.Sorted()
		changed := false
		for _, i := range kept {
			c := &all[i]
			if c.checked {
				continue
			}
			sum, err := l.current(ctx, c.id)
			if err != nil {
				if logfile.EndsStoreWide(err) {
					return summary.Page{}, err
				}
				c.listed, c.bad, changed = false, unlistedErr(err), true
				continue
			}
			if !sameRank(&c.sum, &sum) {
				changed = true
			}
			c.sum, c.checked = sum, true
		}
		if changed {
			continue
		}
		entries, next := sel.Page(kept)
		page := summary.Page{Items: make([]summary.Summary, len(entries)), Next: next}
		for j, i := range entries {
			page.Items[j] = all[i].sum
		}
		for i := range all { // in ID order, as sessionIDs lists them
			if all[i].bad != nil {
				page.Unreadable = append(page.Unreadable, summary.UnreadableOf(all[i].id, all[i].bad))
			}
		}
		l.fillLeases(ctx, page.Items)
		return page, nil
	}
}

// scanSession reads what Scan needs of session id: the ranking fields
// of its summary.json when it names the log on disk, else its summary
// computed from the log. Both files are reached through the session
// directory, opened once (vfs.Sub): on the real file system that saves
// resolving the directory again for each.
func (l *Lister) scanSession(ctx context.Context, id session.SessionID) (scanned, error) {
	if dir, err := vfs.Sub(l.root.FS, layout.SessionDir(id)); err == nil {
		k, ok := readSummaryKeys(dir, id)
		var fi fs.FileInfo
		if ok {
			fi, err = dir.Lstat(layout.LogFile)
		}
		_ = dir.Close() // a directory handle: nothing to flush
		if ok && err == nil && (logfile.SummaryFile{Log: k.Log, LogSize: k.LogSize, LogMtime: k.LogMtime}).Matches(fi) {
			return scanned{id: id, sum: k.ranked(), listed: true}, nil
		}
	}
	sum, err := l.current(ctx, id)
	if err != nil {
		if logfile.EndsStoreWide(err) {
			return scanned{}, err
		}
		return scanned{id: id, bad: unlistedErr(err)}, nil
	}
	return scanned{id: id, sum: sum, listed: true, checked: true}, nil
}

// unlistedErr returns why a listing cannot list a session whose summary
// failed with err, for Page.Unreadable: nil for ErrNotFound (deleted
// meanwhile, or not a session), which a listing leaves out silently;
// err itself for anything else (damage, a permission error), which it
// reports.
func unlistedErr(err error) error {
	if errors.Is(err, sessionstore.ErrNotFound) {
		return nil
	}
	return err
}

// sameRank reports whether a and b filter and order alike.
func sameRank(a, b *summary.Summary) bool {
	return a.ID == b.ID && a.State == b.State && a.Kind == b.Kind && a.ParentID == b.ParentID &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.Project == b.Project && maps.Equal(a.Labels, b.Labels)
}

// --- ranking fields of summary.json -----------------------------------------

// summaryKeys is the part of summary.json that ranks a session: what
// summary.Query.Match and summary.KeyOf read, and what decides whether the
// file describes the log on disk. Decoding only these costs about half of
// decoding the whole summary.
type summaryKeys struct {
	Version  int          `json:"v"`
	Log      vfs.Identity `json:"log"`
	LogSize  int64        `json:"log_size"`
	LogMtime int64        `json:"log_mtime"`
	Revision uint64       `json:"revision"`
	Summary  struct {
		ID        session.SessionID   `json:"id"`
		State     session.State       `json:"state"`
		Kind      session.SessionKind `json:"kind"`
		ParentID  session.SessionID   `json:"parent_id"`
		CreatedAt time.Time           `json:"created_at"`
		UpdatedAt time.Time           `json:"updated_at"`
		Revision  uint64              `json:"revision"`
		Labels    map[string]string   `json:"labels"`
		Project   string              `json:"project"`
	} `json:"summary"`
}

// ranked returns a Summary holding only the ranking fields.
func (k *summaryKeys) ranked() summary.Summary {
	return summary.Summary{
		ID: k.Summary.ID, State: k.Summary.State, Kind: k.Summary.Kind, ParentID: k.Summary.ParentID,
		CreatedAt: k.Summary.CreatedAt, UpdatedAt: k.Summary.UpdatedAt, Revision: k.Revision,
		Labels: k.Summary.Labels, Project: k.Summary.Project,
	}
}

// readSummaryKeys reads the summary.json of session id from its
// directory dir, with the checks of logfile.DecodeSummary (checksum
// framing, then logfile.SummaryOf) and the current version, decoding only
// its ranking fields.
func readSummaryKeys(dir vfs.FS, id session.SessionID) (summaryKeys, bool) {
	bp := summaryBufs.Get().(*[]byte)
	defer summaryBufs.Put(bp)
	b, err := readSmallFile(dir, layout.SummaryFile, logfile.MaxSummaryBytes, bp)
	if err != nil {
		return summaryKeys{}, false
	}
	return decodeSummaryKeys(b, id)
}

// summaryBufs holds read buffers for summary files (a few KiB each), so
// that a scan of many sessions does not make a buffer per session.
var summaryBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// readSmallFile reads name into *buf (grown as needed, kept for reuse),
// refusing more than limit bytes. Unlike vfs.ReadFile, which starts from
// a 512-byte buffer, it reads a small file with one read and the read
// that sees its end.
func readSmallFile(fsys vfs.FS, name string, limit int64, buf *[]byte) ([]byte, error) {
	f, err := fsys.OpenFile(name, layout.RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		*buf = b
		if int64(len(b)) > limit {
			return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("file larger than limit")}
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func decodeSummaryKeys(b []byte, id session.SessionID) (summaryKeys, bool) {
	var k summaryKeys
	if !layout.UnframeJSON(b, &k) {
		return summaryKeys{}, false
	}
	if k.Version != logfile.SummaryVersion || !logfile.SummaryOf(id, k.Version, k.Summary.ID, k.Revision, k.Summary.Revision) {
		return summaryKeys{}, false
	}
	return k, true
}

// current is logfile.Current without the log's state, refused once the
// store is closed (as every read of a session is).
func (l *Lister) current(ctx context.Context, id session.SessionID) (summary.Summary, error) {
	if l.host.Closed() {
		return summary.Summary{}, sessionstore.ErrClosed
	}
	sum, _, err := logfile.Current(ctx, l.root, id)
	return sum, err
}

// Ranked reads the ranking fields of session id's summary.json in its
// directory dir as a scan reads them (the other fields zero); ok is false
// when the file fails the checks a scan makes of it.
func Ranked(dir vfs.FS, id session.SessionID) (summary.Summary, bool) {
	k, ok := readSummaryKeys(dir, id)
	if !ok {
		return summary.Summary{}, false
	}
	return k.ranked(), true
}
