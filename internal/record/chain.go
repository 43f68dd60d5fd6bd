package record

// A chain is a full record and the deltas after it. Writers keep chains
// short enough that loading the latest revision reads at most about one and
// a half snapshots (FORMAT.md, "Chains"): Chain is that policy, for every
// adapter that writes these records.

const (
	// MaxChainDeltas bounds the deltas a writer writes after a full record.
	MaxChainDeltas = 1000
	// chainBudgetNum/chainBudgetDen bounds a chain's bytes (its full
	// record's payload and its deltas' lines), as a fraction of the newest
	// snapshot's size.
	chainBudgetNum, chainBudgetDen = 3, 2
)

// Chain is what a writer knows of its log's latest chain. The zero value
// knows nothing: the next record is full.
type Chain struct {
	snap   []byte // the latest revision's snapshot; nil: unknown
	full   int    // payload bytes of the chain's full record
	deltas int    // line bytes of the chain's deltas
	n      int    // number of deltas
}

// Start starts a chain at a full record holding snap (retained).
func (c *Chain) Start(snap []byte) { *c = Chain{snap: snap, full: len(snap)} }

// Resume sets the chain to one whose full record's payload has fullLen
// bytes, followed by n deltas whose lines total deltaBytes, the last of
// which rebuilds snap (retained).
func (c *Chain) Resume(snap []byte, fullLen, n, deltaBytes int) {
	*c = Chain{snap: snap, full: fullLen, deltas: deltaBytes, n: n}
}

// Snapshot returns the latest revision's snapshot, nil when unknown.
func (c *Chain) Snapshot() []byte { return c.snap }

// DeltaLine returns the line of a delta record m (its Kind and Version are
// set here) that turns the latest snapshot into payload, when the policy
// allows one: the delta is smaller than payload, applying it gives payload
// byte for byte (Diff checks both), the chain's bytes with it stay within
// 1.5× payload, its deltas' lines within maxRecord, and it has fewer than
// MaxChainDeltas deltas. Otherwise it returns nil: write a full record.
func (c *Chain) DeltaLine(m Meta, payload []byte, maxRecord int) []byte {
	if c.snap == nil || c.n >= MaxChainDeltas {
		return nil
	}
	d, ok := Diff(c.snap, payload)
	if !ok {
		return nil
	}
	m.Kind, m.Version = KindDelta, VersionOf(KindDelta)
	line := Encode(m, d)
	if c.full+c.deltas+len(line) > len(payload)*chainBudgetNum/chainBudgetDen || c.deltas+len(line) > maxRecord {
		return nil
	}
	return line
}

// Advance records an appended record of kind whose snapshot is payload
// (retained) and whose line has lineLen bytes.
func (c *Chain) Advance(kind string, payload []byte, lineLen int) {
	if kind != KindDelta {
		c.Start(payload)
		return
	}
	c.snap = payload
	c.deltas += lineLen
	c.n++
}
