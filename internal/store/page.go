package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadCursor is returned for a cursor this store did not hand out.
var ErrBadCursor = errors.New("invalid cursor")

func encodeCursor(seq int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func decodeCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 8 {
		return 0, ErrBadCursor
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// listPage reads one page of a keyset-paginated listing: at most limit rows
// whose seq follows the cursor, in seq order, and the next page's cursor (""
// on the last page). query gives the statement and arguments selecting the
// rows with seq > after, without ORDER BY and LIMIT; scan reads one row and
// its seq. what names the listing in errors ("list evidence"). The rows are
// closed before listPage returns.
func listPage[T any](ctx context.Context, p *pool, what string, limit int, cursor string,
	query func(after int64) (string, []any), scan func(*sql.Rows) (T, int64, error)) ([]T, string, error) {
	if limit < 1 {
		return nil, "", fmt.Errorf("store: %s: limit must be at least 1, got %d", what, limit)
	}
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	q, args := query(after)
	rows, err := p.QueryContext(ctx, q+` ORDER BY seq LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	var (
		out  []T
		seqs []int64
	)
	for rows.Next() {
		v, seq, err := scan(rows)
		if err != nil {
			return nil, "", err
		}
		out, seqs = append(out, v), append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if len(out) > limit {
		return out[:limit], encodeCursor(seqs[limit-1]), nil
	}
	return out, "", nil
}
