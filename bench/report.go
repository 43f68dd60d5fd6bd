package main

import "fmt"

// report collects the tables of a run and the figures its targets are
// checked against.
type report struct {
	tables []*table
	fig    map[string]float64
}

func (r *report) add(t *table) { r.tables = append(r.tables, t) }

func (r *report) set(key string, v float64) {
	if r.fig == nil {
		r.fig = map[string]float64{}
	}
	r.fig[key] = v
}

// targets checks the targets against the figures this run measured
// (a target whose workload did not run is left out).
func (r *report) targets() []target {
	var ts []target
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := r.fig[k]; !ok {
				return false
			}
		}
		return true
	}
	f := r.fig
	for _, size := range []string{"1KiB", "16KiB"} {
		if k := "W1/" + size + "/jsonl÷raw"; has(k) {
			ts = append(ts, target{"W1 " + size + ": jsonlstore vs raw append (ops/s)", "≥ 0.90×", fmt.Sprintf("%.2f×", f[k]), f[k] >= 0.9})
		}
	}
	if k := "W1/256KiB/jsonl÷sqlite"; has(k) {
		ts = append(ts, target{"W1 256KiB: jsonlstore vs SQLite (ops/s)", "≥ 2.5×", fmt.Sprintf("%.2f×", f[k]), f[k] >= 2.5})
	}
	if has("W2/appended", "W2/written", "W2/final") {
		x := f["W2/appended"] / f["W2/final"]
		ts = append(ts, target{"W2: bytes the store appended ÷ final snapshot", "≤ 4×",
			fmt.Sprintf("%s (%s for a %s snapshot; %s with summary.json, wchar)", fmtX(x), fmtBytes(int64(f["W2/appended"])), fmtBytes(int64(f["W2/final"])), fmtX(f["W2/written"]/f["W2/final"])), x <= 4})
	}
	if k := "W2/fullrecords÷jsonl"; has(k) {
		ts = append(ts, target{"W2: jsonlstore vs jsonlstore FullRecordsOnly (revisions/s)", "≥ 5× faster", fmt.Sprintf("%.2f×", f[k]), f[k] >= 5})
	}
	if k := "W3/many÷one"; has(k) {
		ts = append(ts, target{fmt.Sprintf("W3: load latest, %.0f revisions vs 1 (p50)", f["W3/revs"]), "≤ 2×", fmt.Sprintf("%.2f×", f[k]), f[k] <= 2})
	}
	if k := "W4/fresh-ms"; has(k) {
		ts = append(ts, target{fmt.Sprintf("W4: first page of %.0f sessions, fresh process (p50, Open+List)", f["W4/sessions"]), "≤ 150 ms", fmt.Sprintf("%.1f ms", f[k]), f[k] <= 150})
	}
	if has("W4/cli-ls-ms", "W4/cli-help-ms") {
		x := f["W4/cli-ls-ms"] / f["W4/cli-help-ms"]
		ts = append(ts, target{fmt.Sprintf("W4: sessions ls --limit 50 of %.0f sessions, fresh process, exec to exit ÷ sessions help (p50)", f["W4/sessions"]), "≤ 3×",
			fmt.Sprintf("%s (%.1f ms; sessions help %.1f ms)", fmtX(x), f["W4/cli-ls-ms"], f["W4/cli-help-ms"]), x <= 3})
	}
	if has("W4/cli-ls-ms", "W4/pg-fresh-ms", "W4/cli-pg-ms") {
		pg := min(f["W4/pg-fresh-ms"], f["W4/cli-pg-ms"])
		ts = append(ts, target{"W4: sessions ls, fresh process, exec to exit vs pgstore's fresh process (p50)", "below pgstore",
			fmt.Sprintf("%.1f ms (pgstore: %.1f ms in a child, %.1f ms as sessions ls)", f["W4/cli-ls-ms"], f["W4/pg-fresh-ms"], f["W4/cli-pg-ms"]), f["W4/cli-ls-ms"] < pg})
	}
	if k := "W4/live-ms"; has(k) {
		ts = append(ts, target{"W4: first page, live index (p50)", "≤ 0.5 ms", fmt.Sprintf("%.3f ms", f[k]), f[k] <= 0.5})
	}
	if k := "W5/MBps"; has(k) {
		ts = append(ts, target{fmt.Sprintf("W5: compaction throughput (%.0f MiB log)", f["W5/MiB"]), "≥ 200 MB/s", fmt.Sprintf("%.0f MB/s", f[k]), f[k] >= 200})
	}
	if k := "W5/rssMiB"; has(k) {
		ts = append(ts, target{"W5: compaction peak RSS", "≤ 64 MiB", fmt.Sprintf("%.1f MiB", f[k]), f[k] <= 64})
	}
	if k := "W6/last÷first"; has(k) {
		ts = append(ts, target{fmt.Sprintf("W6: p50 of the last 60 appends ÷ the first 60 (%.0f MiB session)", f["W6/MiB"]), "≤ 1.3×", fmt.Sprintf("%.2f×", f[k]), f[k] <= 1.3})
	}
	if k := "W6/rewind÷append"; has(k) {
		ts = append(ts, target{"W6: p50 of a rewind by one message ÷ p50 of the last 60 appends", "≤ 2×", fmt.Sprintf("%.2f×", f[k]), f[k] <= 2})
		ts = append(ts, target{"W6: bytes a rewind adds to the log", "≤ 8 KiB", fmt.Sprintf("%.0f B", f["W6/rewindBytes"]), f["W6/rewindBytes"] <= 8<<10})
	}
	if k := "W6/last÷raw"; has(k) {
		ts = append(ts, target{"W6: p50 of the last 60 appends ÷ raw O_APPEND+fdatasync of the new message's bytes", "≤ 3×", fmt.Sprintf("%.2f×", f[k]), f[k] <= 3})
	}
	if k := "W6/load÷read"; has(k) {
		ts = append(ts, target{fmt.Sprintf("W6: Load of the latest revision (%.0f MiB session) ÷ reading its unique content once", f["W6/MiB"]), "≤ 2×", fmt.Sprintf("%.2f×", f[k]), f[k] <= 2})
	}
	if k := "W2/jsonl÷sqlite"; has(k) {
		ts = append(ts, target{"W2: jsonlstore vs SQLite, row per message (revisions/s)", "≥ 1.0×", fmt.Sprintf("%.2f×", f[k]), f[k] >= 1})
	}
	for _, v := range []string{"small", "large"} {
		if k := "W7/" + v + "/ms"; has(k) {
			ts = append(ts, target{fmt.Sprintf("W7 %s: rare word among the sessions (%s of text), fresh process, exec to exit (p50)", v, fmtBytes(int64(f["W7/"+v+"/MiB"]*(1<<20)))),
				"≤ 50 ms", fmt.Sprintf("%.1f ms (empty process %.1f ms; proving the index by a probe of every log %.1f ms)", f[k], f["W7/noop-ms"], f["W7/floor-ms"]), f[k] <= 50})
		}
	}
	for _, b := range []int{1, 16} {
		if k := fmt.Sprintf("W7/append%d", b); has(k) {
			ts = append(ts, target{fmt.Sprintf("W7: indexing an append's new text, %d append(s) per index write", b), "≤ 20% of the append", fmt.Sprintf("%.0f%%", 100*f[k]), f[k] <= 0.2})
		}
	}
	if has("W8/p50÷idle", "W8/p99÷idle", "W8/idle-ms") {
		ts = append(ts, target{"W8: search while 8 processes append to 8 sessions of 300, p50 ÷ the same search on the idle store (p50)", "≤ 3×",
			fmt.Sprintf("%.1f× (%.0f ms; idle %.1f ms; reads floor under the same load %.1f×; CPU floor %.1f×%s)", f["W8/p50÷idle"], f["W8/p50-ms"], f["W8/idle-ms"], f["W8/floor p50÷idle"],
				f["W8/cpu p50÷idle"], w8FloorNote(f["W8/cpu p50÷idle"], 3)), f["W8/p50÷idle"] <= 3})
		ts = append(ts, target{"W8: the same, p99 ÷ the idle store's p50", "≤ 10×",
			fmt.Sprintf("%.1f× (%.0f ms; reads floor %.1f×; CPU floor %.1f×%s)", f["W8/p99÷idle"], f["W8/p99-ms"], f["W8/floor p99÷idle"],
				f["W8/cpu p99÷idle"], w8FloorNote(f["W8/cpu p99÷idle"], 10)), f["W8/p99÷idle"] <= 10})
	}
	return ts
}

// w8FloorNote says when W8's CPU floor (a fresh CPU-bound process of an
// idle search's length, under the same load) is itself past the target:
// the scheduler alone then keeps this machine from meeting it.
func w8FloorNote(cpu, target float64) string {
	if cpu <= target {
		return ""
	}
	return fmt.Sprintf(": the scheduler alone is past %.0f× on this machine, the target's floor here", target)
}
