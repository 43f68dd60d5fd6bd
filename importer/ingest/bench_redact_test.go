package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer/ingest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/redact"
)

// BenchmarkImportRedact is an import of the benchmark corpus with the
// default redaction rules beside the same import with redaction off,
// rounds interleaved so that both meet the same machine: redact÷off is
// the ratio of their times (the target is ≤ 1.10: redaction costs at most
// a tenth of import throughput).
func BenchmarkImportRedact(b *testing.B) {
	c := loadBenchCorpus(b)
	ctx := context.Background()
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(b, err)
	var took [2]time.Duration
	b.SetBytes(c.bytes)
	for i := 0; b.Loop(); i++ {
		for k := range 2 {
			which := (i + k) % 2 // alternate which goes first
			red := []*redact.Redactor{nil, off}[which]
			st, err := jsonlstore.Open(b.TempDir(), jsonlstore.Options{Redactor: red})
			require.NoError(b, err)
			start := time.Now()
			for tool, dirs := range c.dirs {
				rep, err := ingest.Run(ctx, st, tool, dirs, ingest.Options{})
				require.NoError(b, err)
				require.Zero(b, rep.Totals.Failed)
			}
			took[which] += time.Since(start)
			require.NoError(b, st.Close())
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(c.bytes)/(took[0].Seconds()/n)/1e6, "redact-MB/s")
	b.ReportMetric(float64(c.bytes)/(took[1].Seconds()/n)/1e6, "off-MB/s")
	b.ReportMetric(float64(took[0])/float64(took[1]), "redact÷off")
}
