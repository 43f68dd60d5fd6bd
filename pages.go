package sessionstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore/summary"
)

// Pages yields the pages of s's sessions that match q, as List returns
// them: from q.Cursor (the first page when empty) to the last, the one
// with no Next. An error is yielded once, last; breaking out of the loop
// stops the listing. Every page reports the sessions that cannot be read
// (Page.Unreadable), so a caller that wants them reads them off any one
// page. Errors as List.
func Pages(ctx context.Context, s Store, q summary.Query) iter.Seq2[summary.Page, error] {
	return func(yield func(summary.Page, error) bool) {
		for {
			page, err := s.List(ctx, q)
			if err != nil {
				yield(summary.Page{}, err)
				return
			}
			if !yield(page, nil) || page.Next == "" {
				return
			}
			q.Cursor = page.Next
		}
	}
}
