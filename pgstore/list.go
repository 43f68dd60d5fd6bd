package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// orderSQL maps each order to its key columns and direction. Every key
// ends with the session ID, as summary.Compare breaks ties, and matches an
// index (pgstore_summaries_updated, _created, the primary key), so a page
// is an index range scan from the cursor.
var orderSQL = map[summary.Order]struct {
	cols []string
	desc bool
}{
	summary.OrderUpdatedDesc: {[]string{"s.updated_s", "s.updated_ns", "s.session_id"}, true},
	summary.OrderUpdatedAsc:  {[]string{"s.updated_s", "s.updated_ns", "s.session_id"}, false},
	summary.OrderCreatedDesc: {[]string{"s.created_s", "s.created_ns", "s.session_id"}, true},
	summary.OrderCreatedAsc:  {[]string{"s.created_s", "s.created_ns", "s.session_id"}, false},
	summary.OrderIDAsc:       {[]string{"s.session_id"}, false},
}

// List implements sessionstore.Store: one query per page, filtered and
// ordered in the database, resuming after the cursor's key (the cursor is
// package summary's, so its semantics are the in-memory index's). Lease
// status is computed from the session rows when the page is read.
func (s *Store) List(ctx context.Context, q summary.Query) (summary.Page, error) {
	if err := s.ready(ctx); err != nil {
		return summary.Page{}, err
	}
	q, err := q.Normalize()
	if err != nil {
		return summary.Page{}, err
	}
	after, resume, err := summary.DecodeCursor(q)
	if err != nil {
		return summary.Page{}, err
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(q.States) > 0 {
		states := make([]string, len(q.States))
		for i, st := range q.States {
			states[i] = string(st)
		}
		where = append(where, "s.state = ANY("+arg(states)+")")
	}
	if len(q.Kinds) > 0 {
		kinds := make([]string, len(q.Kinds))
		for i, k := range q.Kinds {
			kinds[i] = string(k)
		}
		where = append(where, "s.kind = ANY("+arg(kinds)+")")
	}
	if q.ParentID != "" {
		where = append(where, "s.parent_id = "+arg(string(q.ParentID)))
	}
	if !q.UpdatedSince.IsZero() {
		where = append(where, fmt.Sprintf("(s.updated_s, s.updated_ns) >= (%s, %s)",
			arg(q.UpdatedSince.Unix()), arg(int32(q.UpdatedSince.Nanosecond())))) //nolint:gosec // G115: nanoseconds are < 1e9
	}
	// Labels and the project are read from the summary document, as the
	// in-memory index reads them from the Summary (summary.Query.Match).
	if len(q.Labels) > 0 {
		labels, err := json.Marshal(q.Labels)
		if err != nil {
			return summary.Page{}, opErr("list", "", err)
		}
		where = append(where, "(convert_from(s.doc, 'UTF8')::jsonb -> 'labels') @> "+arg(string(labels))+"::jsonb")
	}
	if q.Project != "" {
		project := "rtrim(coalesce(convert_from(s.doc, 'UTF8')::jsonb ->> 'project', ''), '/')"
		want := strings.TrimRight(q.Project, "/")
		switch {
		case !q.ProjectTree:
			where = append(where, project+" = "+arg(want))
		case want == "": // the tree of the root: every absolute path
			where = append(where, "starts_with(coalesce(convert_from(s.doc, 'UTF8')::jsonb ->> 'project', ''), '/')")
		default:
			where = append(where, "("+project+" = "+arg(want)+" OR starts_with("+project+", "+arg(want+"/")+"))")
		}
	}
	o := orderSQL[q.Order]
	if resume {
		key := []string{arg(string(after.ID))}
		if len(o.cols) == 3 {
			key = []string{arg(after.Time.Unix()), arg(int32(after.Time.Nanosecond())), key[0]} //nolint:gosec // G115: nanoseconds are < 1e9
		}
		cmp := ">"
		if o.desc {
			cmp = "<"
		}
		where = append(where, fmt.Sprintf("(%s) %s (%s)", strings.Join(o.cols, ", "), cmp, strings.Join(key, ", ")))
	}
	dir := ""
	if o.desc {
		dir = " DESC"
	}
	sql := summarySelect
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY " + strings.Join(o.cols, dir+", ") + dir + " LIMIT " + arg(q.Limit+1)

	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return summary.Page{}, opErr("list", "", err)
	}
	page := summary.Page{Items: []summary.Summary{}}
	var more bool
	for rows.Next() {
		if len(page.Items) == q.Limit {
			more = true
			break
		}
		sum, _, err := scanSummary(rows)
		if err != nil {
			rows.Close()
			return summary.Page{}, opErr("list", "", err)
		}
		page.Items = append(page.Items, sum)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return summary.Page{}, opErr("list", "", err)
	}
	if more {
		page.Next = summary.EncodeCursor(q, summary.KeyOf(q.Order, &page.Items[len(page.Items)-1]))
	}
	return page, nil
}

// scanSummary reads a summary row (doc and lease columns): the summary,
// with its lease status, and the lease row.
func scanSummary(row pgx.Row) (summary.Summary, leaseRow, error) {
	var doc []byte
	var l leaseRow
	var gen, remaining, age int64
	var pid int32
	if err := row.Scan(&doc, &gen, &l.state, &l.nonce, &l.host, &pid, &l.label, &l.acquiredAt, &l.heartbeatAt,
		&l.expired, &remaining, &age); err != nil {
		return summary.Summary{}, l, err
	}
	l.pid = int(pid)
	l.remaining, l.age = time.Duration(remaining)*time.Microsecond, time.Duration(age)*time.Microsecond
	var err error
	if l.gen, err = fromBigint("generation", gen); err != nil {
		return summary.Summary{}, l, err
	}
	sum, err := decodeSummary(doc)
	if err != nil {
		return sum, l, err
	}
	sum.Lease = l.status()
	return sum, l, nil
}

// summarySelect selects what scanSummary reads, for a WHERE clause on s
// (the summary) and l (the session's lease) to follow.
var summarySelect = `SELECT s.doc, ` + leaseColsOf("l.") + ` FROM pgstore_summaries s JOIN pgstore_sessions l ON l.id = s.session_id`

// decodeSummary decodes a stored summary document.
func decodeSummary(doc []byte) (summary.Summary, error) {
	var sum summary.Summary
	if err := json.Unmarshal(doc, &sum); err != nil {
		return sum, fmt.Errorf("decode summary: %w", err)
	}
	sum.CreatedAt, sum.UpdatedAt = sum.CreatedAt.UTC(), sum.UpdatedAt.UTC()
	return sum, nil
}

// summaryOf reads the stored summary of id, without lease status; ok is
// false when the session does not exist.
func (s *Store) summaryOf(ctx context.Context, q querier, id session.SessionID) (sum summary.Summary, ok bool, err error) {
	var doc []byte
	err = q.QueryRow(ctx, `SELECT doc FROM pgstore_summaries WHERE session_id = $1`, string(id)).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return sum, false, nil
	}
	if err != nil {
		return sum, false, err
	}
	sum, err = decodeSummary(doc)
	return sum, err == nil, err
}

// querier is a pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}
