package summary_test

import (
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// ExampleIndex pages through an index two items at a time while a session
// is updated between pages: the untouched sessions each appear once.
func ExampleIndex() {
	ix := summary.NewIndex()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		ix.Put(summary.Summary{ID: session.SessionID(id), State: session.StateIdle, Revision: 1, UpdatedAt: at.Add(time.Duration(i) * time.Minute)})
	}

	q := summary.Query{Order: summary.OrderUpdatedDesc, Limit: 2}
	for {
		page, err := ix.Query(q)
		if err != nil {
			panic(err)
		}
		for _, s := range page.Items {
			fmt.Print(s.ID, " ")
		}
		fmt.Println("|")
		if page.Next == "" {
			break
		}
		// "a" moves to the front, behind the cursor: this listing no
		// longer sees it, the next one will.
		ix.Put(summary.Summary{ID: "a", State: session.StateRunning, Revision: 2, UpdatedAt: at.Add(time.Hour)})
		q.Cursor = page.Next
	}
	// Output:
	// e d |
	// c b |
}
