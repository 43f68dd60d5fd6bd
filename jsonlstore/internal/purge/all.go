package purge

import (
	"context"
	"errors"

	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// NotPurged is what redaction never reaches, said in every report.
var NotPurged = []string{
	"copies made outside the store before (backups, exports, copies of its files)",
	"the disk blocks the old files occupied: the file system frees them, it does not erase them",
}

// All is the facade's Redact of sessions ids: each redacted by one (under
// its lease; a held one comes back Skipped), then the caches the
// redactions left stale rewritten once as new files — the listing
// catalog (catalog) and the search index (search, nil when the store has
// none) — and each redacted session's report saying which were, and how
// to finish what failed. Its error joins the sessions' errors.
func All(ctx context.Context, ids []session.SessionID, one func(session.SessionID) (maintenance.RedactReport, error),
	catalog, search func(context.Context) error,
) ([]maintenance.RedactReport, error) {
	var reps []maintenance.RedactReport
	var errs []error
	for _, id := range ids {
		rep, err := one(id)
		reps = append(reps, rep)
		if err != nil {
			errs = append(errs, err)
		}
	}
	var caches []string
	rewrite := func(reindex func(context.Context) error, what string) bool {
		if reindex == nil {
			return false
		}
		if err := reindex(ctx); err != nil {
			caches = append(caches, what+" ("+err.Error()+"): run `sessions reindex`")
			return false
		}
		return true
	}
	catalogDone := rewrite(catalog, "the listing catalog")
	searchDone := rewrite(search, "the search index")
	for i := range reps {
		if reps[i].Skipped != "" {
			continue
		}
		reps[i].Catalog = catalogDone
		reps[i].Search = searchDone
		reps[i].NotPurged = append(reps[i].NotPurged, caches...)
	}
	return reps, errors.Join(errs...)
}
