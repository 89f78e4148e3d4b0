package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// The log keeps its entries and its tree's stored hashes in tiles of
// tileWidth, a row per tile instead of a row per entry and per hash
// (migration 016): 32 bytes of an entry or a hash cost about 33 on disk,
// where a row of their own cost about 85 more on PostgreSQL, in the heap
// and an index.
//
// An append writes what it adds to a tile as a piece of its own, keyed by
// (tile, start), so a trickle of appends never rewrites a tile: the append
// that fills a tile joins its pieces into one row at start 0. A tile is
// read as its pieces in start order.
//
// log_entry_tiles: the entries of indexes tile×tileWidth+start onwards,
// and the intake sequence of each (first_seq, then the increase from one
// to the next as uvarints), with the last one indexed to find an
// evidence's entry.
//
// log_hash_tiles: the stored hashes above the leaves (a leaf's is read from
// its entry), in the order tlog stores them, numbered from 0 without the
// leaves' (innerIndex).
const tileWidth = 256

// innerIndex numbers a stored hash above the leaves among those alone: the
// hash at level ≥ 1 and index n is stored right after leaf (n+1)·2^level − 1,
// so (n+1)·2^level leaves precede it in tlog's numbering.
func innerIndex(id int64) int64 {
	level, n := tlog.SplitStoredHashIndex(id)
	return id - (n+1)<<level
}

// piece is one row of a tile table.
type piece struct {
	tile, start      int64
	firstSeq, endSeq int64  // log_entry_tiles: the first and last entry's intake sequence
	seqs             []byte // log_entry_tiles: the increases, as uvarints
	data             []byte // tileWidth-byte items from start on
}

// writeEntries stores the log entries evs at indexes first onwards.
func writeEntries(ctx context.Context, tx *txn, first int64, evs []logEntry) error {
	for i := 0; i < len(evs); {
		idx := first + int64(i)
		p := piece{tile: idx / tileWidth, start: idx % tileWidth, firstSeq: evs[i].seq, seqs: []byte{}}
		n := min(len(evs)-i, int(tileWidth-p.start))
		for j, ev := range evs[i : i+n] {
			if j > 0 {
				p.seqs = binary.AppendUvarint(p.seqs, uint64(ev.seq-evs[i+j-1].seq))
			}
			p.data = append(p.data, ev.entry[:]...)
			p.endSeq = ev.seq
		}
		if err := writePiece(ctx, tx, "log_entry_tiles", p); err != nil {
			return err
		}
		i += n
	}
	return nil
}

// writeHashes stores the hashes above the leaves among hs, which continue
// those stored before without a gap.
func writeHashes(ctx context.Context, tx *txn, hs map[int64]tlog.Hash) error {
	var inner []int64
	for id := range hs {
		if level, _ := tlog.SplitStoredHashIndex(id); level > 0 {
			inner = append(inner, id)
		}
	}
	slices.Sort(inner)
	for i := 0; i < len(inner); {
		d := innerIndex(inner[i])
		p := piece{tile: d / tileWidth, start: d % tileWidth}
		n := min(len(inner)-i, int(tileWidth-p.start))
		for j, id := range inner[i : i+n] {
			if innerIndex(id) != d+int64(j) {
				return fmt.Errorf("stored hash %d of the log does not follow hash %d", id, inner[i+j-1])
			}
			h := hs[id]
			p.data = append(p.data, h[:]...)
		}
		if err := writePiece(ctx, tx, "log_hash_tiles", p); err != nil {
			return err
		}
		i += n
	}
	return nil
}

// writePiece inserts p into table, or, when p fills its tile up and
// follows pieces of it, the whole tile in place of them.
func writePiece(ctx context.Context, tx *txn, table string, p piece) error {
	entries := table == "log_entry_tiles"
	if p.start > 0 && p.start+int64(len(p.data)/itemSize) == tileWidth {
		ps, err := readPieces(ctx, tx, table, p.tile, p.tile, entries)
		if err != nil {
			return err
		}
		whole, err := join(append(ps, p), entries)
		if err != nil {
			return fmt.Errorf("tile %d of %s: %w", p.tile, table, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE tile = ?`, p.tile); err != nil {
			return err
		}
		p = whole
	}
	if entries {
		_, err := tx.ExecContext(ctx, `INSERT INTO log_entry_tiles (tile, start, first_seq, last_seq, seqs, entries) VALUES (?, ?, ?, ?, ?, ?)`,
			p.tile, p.start, p.firstSeq, p.endSeq, p.seqs, p.data)
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO log_hash_tiles (tile, start, hashes) VALUES (?, ?, ?)`, p.tile, p.start, p.data)
	return err
}

// join makes one piece of a tile's pieces, which must follow each other
// from start 0.
func join(ps []piece, entries bool) (piece, error) {
	w := piece{tile: ps[0].tile, firstSeq: ps[0].firstSeq, seqs: []byte{}}
	for i, p := range ps {
		if p.start != int64(len(w.data)/itemSize) {
			return piece{}, fmt.Errorf("a piece at %d where %d was due", p.start, len(w.data)/itemSize)
		}
		if entries && i > 0 {
			w.seqs = binary.AppendUvarint(w.seqs, uint64(p.firstSeq-w.endSeq))
		}
		w.seqs = append(w.seqs, p.seqs...)
		w.data = append(w.data, p.data...)
		w.endSeq = p.endSeq
	}
	return w, nil
}

// readPieces reads the pieces of tiles from to to of table, in order; the
// entries' sequences too when seqs.
func readPieces(ctx context.Context, q querier, table string, from, to int64, seqs bool) ([]piece, error) {
	cols := `tile, start, hashes`
	switch {
	case table == "log_entry_tiles" && seqs:
		cols = `tile, start, first_seq, last_seq, seqs, entries`
	case table == "log_entry_tiles":
		cols = `tile, start, entries`
	}
	rows, err := q.QueryContext(ctx, `SELECT `+cols+` FROM `+table+` WHERE tile >= ? AND tile <= ? ORDER BY tile, start`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ps []piece
	for rows.Next() {
		var p piece
		dest := []any{&p.tile, &p.start, &p.data}
		if seqs && table == "log_entry_tiles" {
			dest = []any{&p.tile, &p.start, &p.firstSeq, &p.endSeq, &p.seqs, &p.data}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, rows.Err()
}

// tileItems reads the 32-byte items of table at the given positions (entry
// indexes, or innerIndex numbers) into out, by position.
func tileItems(ctx context.Context, q querier, table string, positions []int64, out map[int64][32]byte) error {
	tiles := map[int64]bool{}
	for _, p := range positions {
		tiles[p/tileWidth] = true
	}
	ts := make([]int64, 0, len(tiles))
	for t := range tiles {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	col := `hashes`
	if table == "log_entry_tiles" {
		col = `entries`
	}
	for start := 0; start < len(ts); start += logChunk {
		part := ts[start:min(start+logChunk, len(ts))]
		args := make([]any, len(part))
		for i, t := range part {
			args[i] = t
		}
		rows, err := q.QueryContext(ctx, `SELECT tile, start, `+col+` FROM `+table+` WHERE tile IN (`+strings.TrimSuffix(strings.Repeat(`?, `, len(part)), ", ")+`)`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				tile, first int64
				b           []byte
			)
			if err := rows.Scan(&tile, &first, &b); err != nil {
				rows.Close()
				return err
			}
			for i := 0; i+itemSize <= len(b); i += itemSize {
				out[tile*tileWidth+first+int64(i/itemSize)] = [32]byte(b[i : i+itemSize])
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// entryRange reads the entries at indexes [from, to).
func entryRange(ctx context.Context, q querier, from, to int64) ([][32]byte, error) {
	if from >= to {
		return nil, nil
	}
	ps, err := readPieces(ctx, q, "log_entry_tiles", from/tileWidth, (to-1)/tileWidth, false)
	if err != nil {
		return nil, err
	}
	out := make([][32]byte, 0, to-from)
	for _, p := range ps {
		for i := 0; i+itemSize <= len(p.data); i += itemSize {
			if idx := p.tile*tileWidth + p.start + int64(i/itemSize); idx >= from && idx < to {
				out = append(out, [32]byte(p.data[i:i+itemSize]))
			}
		}
	}
	if int64(len(out)) != to-from {
		return nil, fmt.Errorf("entries %d to %d of the log: %d found: %w", from, to, len(out), ErrNotFound)
	}
	return out, nil
}

// indexOfSeq is the log index of the evidence with intake sequence seq, ok
// false when it is not in the log.
func indexOfSeq(ctx context.Context, q querier, seq int64) (idx int64, ok bool, err error) {
	var p piece
	err = q.QueryRowContext(ctx, `SELECT tile, start, first_seq, seqs FROM log_entry_tiles WHERE last_seq >= ? ORDER BY last_seq LIMIT 1`, seq).
		Scan(&p.tile, &p.start, &p.firstSeq, &p.seqs)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	at, s := int64(0), p.firstSeq
	for rest := p.seqs; s < seq && len(rest) > 0; at++ {
		d, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, false, fmt.Errorf("tile %d of the log's entries: bad sequences", p.tile)
		}
		s, rest = s+int64(d), rest[n:]
	}
	if s != seq {
		return 0, false, nil
	}
	return p.tile*tileWidth + p.start + at, true, nil
}

// seqIndexes maps each intake sequence in (after, upto] that is in the log
// to its log index.
func seqIndexes(ctx context.Context, q querier, after, upto int64) (map[int64]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT tile, start, first_seq, seqs FROM log_entry_tiles WHERE last_seq > ? AND first_seq <= ?`, after, upto)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var p piece
		if err := rows.Scan(&p.tile, &p.start, &p.firstSeq, &p.seqs); err != nil {
			return nil, err
		}
		s, idx, rest := p.firstSeq, p.tile*tileWidth+p.start, p.seqs
		for {
			if s > after && s <= upto {
				out[s] = idx
			}
			d, n := binary.Uvarint(rest)
			if n <= 0 {
				break
			}
			s, idx, rest = s+int64(d), idx+1, rest[n:]
		}
	}
	return out, rows.Err()
}

// migrateLogToTiles moves the rows of log_entries and log_hashes (migration
// 012) into tiles and drops the two tables (migration 016).
func migrateLogToTiles(ctx context.Context, tx *txn) error {
	for first := int64(0); ; first += tileWidth * logChunk {
		evs, err := oldEntries(ctx, tx, first, first+tileWidth*logChunk)
		if err != nil {
			return fmt.Errorf("read log_entries: %w", err)
		}
		if len(evs) == 0 {
			break
		}
		if err := writeEntries(ctx, tx, first, evs); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, hash FROM log_hashes ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read log_hashes: %w", err)
	}
	hs := map[int64]tlog.Hash{}
	for rows.Next() {
		var (
			id int64
			b  []byte
		)
		if err := rows.Scan(&id, &b); err != nil {
			rows.Close()
			return err
		}
		if len(b) != itemSize {
			rows.Close()
			return fmt.Errorf("stored hash %d of the log is malformed", id)
		}
		hs[id] = tlog.Hash(b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := writeHashes(ctx, tx, hs); err != nil {
		return err
	}
	for _, table := range []string{"log_entries", "log_hashes"} {
		if _, err := tx.ExecContext(ctx, `DROP TABLE `+table); err != nil {
			return err
		}
	}
	return nil
}

// oldEntries reads log_entries' rows of indexes [from, to), which must have
// no gap from from on.
func oldEntries(ctx context.Context, tx *txn, from, to int64) ([]logEntry, error) {
	rows, err := tx.QueryContext(ctx, `SELECT idx, evidence_seq, entry FROM log_entries WHERE idx >= ? AND idx < ? ORDER BY idx`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var evs []logEntry
	for rows.Next() {
		var (
			idx int64
			ev  logEntry
			b   []byte
		)
		if err := rows.Scan(&idx, &ev.seq, &b); err != nil {
			return nil, err
		}
		if idx != from+int64(len(evs)) || len(b) != itemSize {
			return nil, fmt.Errorf("log entry %d is missing or malformed", from+int64(len(evs)))
		}
		ev.entry = [32]byte(b)
		evs = append(evs, ev)
	}
	return evs, rows.Err()
}

// LogIndexes maps the intake sequence of each evidence in (after, upto]
// that is in the log to its index there.
func (s Log) LogIndexes(ctx context.Context, after, upto int64) (map[int64]int64, error) {
	m, err := seqIndexes(ctx, s.r, after, upto)
	if err != nil {
		return nil, fmt.Errorf("store: log indexes: %w", err)
	}
	return m, nil
}
