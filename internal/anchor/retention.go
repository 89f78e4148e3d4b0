package anchor

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/archive"
	"github.com/keeperhq/keeper/internal/receipts"
	"github.com/keeperhq/keeper/internal/store"
)

// Archiver is retention (docs/production.md, "Storage and retention"): it moves
// confirmed evidence taken in more than Retention ago into the receipts
// archive in Dir, a file of whole receipts at a time, and the store drops
// their rows. It runs beside the dispatcher on each API node; the store
// serializes nodes that archive at once.
type Archiver struct {
	Store     Archivable
	Dir       string
	Retention time.Duration
	Logger    *slog.Logger
	Archived  prometheus.Counter // keeper_evidence_archived_total
}

// Archivable is the store as retention needs it: confirmed evidence moved
// out a file at a time, and what its receipts are built from
// (*store.Store).
type Archivable interface {
	receipts.Rows
	ArchiveConfirmed(ctx context.Context, before time.Time, limit int, write func([]store.Evidence) (string, error)) (int, error)
}

// archivePerFile bounds one archive file and the transaction that empties
// the store of its evidence.
const archivePerFile = 1000

// NewArchivedCounter is keeper_evidence_archived_total.
func NewArchivedCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "keeper_evidence_archived_total",
		Help: "Confirmed evidence moved into the receipts archive by retention (KEEPER_EVIDENCE_RETENTION).",
	})
}

// Run archives until ctx ends: every tenth of the retention period (at
// least every second, at most every minute), as long as something is old
// enough.
func (a *Archiver) Run(ctx context.Context) {
	every := min(max(a.Retention/10, time.Second), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := a.ArchiveOnce(ctx); err != nil && ctx.Err() == nil {
			a.Logger.Error("retention: archiving confirmed evidence failed; it stays in the store and is tried again", "error", err, "dir", a.Dir)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ArchiveOnce moves every confirmed evidence older than the retention
// period into the archive, a file at a time, and returns how many moved.
func (a *Archiver) ArchiveOnce(ctx context.Context) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, err := a.Store.ArchiveConfirmed(ctx, time.Now().Add(-a.Retention), archivePerFile, func(evs []store.Evidence) (string, error) { return a.write(ctx, evs) })
		total += n
		if n > 0 {
			a.Archived.Add(float64(n))
			a.Logger.Info("retention: confirmed evidence moved to the receipts archive", "evidence", n, "dir", a.Dir)
		}
		if err != nil || n < archivePerFile {
			return total, err
		}
	}
	return total, ctx.Err()
}

// write stores the receipts of evs as one archive file: one JSON receipt
// per line, as GET /v1/evidence/{id}/receipt gives it.
func (a *Archiver) write(ctx context.Context, evs []store.Evidence) (string, error) {
	lines := make([][]byte, len(evs))
	for i, ev := range evs {
		rc, err := receipts.Of(ctx, a.Store, ev)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(rc)
		if err != nil {
			return "", err
		}
		lines[i] = b
	}
	return archive.Write(a.Dir, lines)
}
