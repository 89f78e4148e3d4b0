package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/keeperhq/keeper/merkle"
)

// treeCache holds the Merkle trees of recently read confirmed batches: a
// confirmed batch never changes, and a page of receipts or a client polling
// its evidence mostly reads the same few batches. It is bounded by the
// leaves it holds, not by the number of trees.
type treeCache struct {
	mu     sync.Mutex
	trees  map[int64]*merkle.Tree
	order  []int64 // oldest first
	leaves int
}

// treeCacheLeaves bounds the cache: about 16 MiB of hashes.
const treeCacheLeaves = 1 << 18

func (c *treeCache) get(id int64) *merkle.Tree {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trees[id]
}

func (c *treeCache) put(id int64, t *merkle.Tree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trees == nil {
		c.trees = map[int64]*merkle.Tree{}
	}
	if _, ok := c.trees[id]; ok || t.Size() > treeCacheLeaves {
		return
	}
	for c.leaves+t.Size() > treeCacheLeaves && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.leaves -= c.trees[old].Size()
		delete(c.trees, old)
	}
	c.trees[id] = t
	c.order = append(c.order, id)
	c.leaves += t.Size()
}

// batchTree returns the Merkle tree of a confirmed batch, built from its
// evidence's leaves in leaf order (or the leaf hashes it kept when some of
// its evidence was archived): the same leaves, hence the same root and audit
// paths, that SubmitAnchor anchored. Log and Maintenance read trees too, so
// this and its cache are the shared db's.
func (s *db) batchTree(ctx context.Context, q querier, id int64) (*merkle.Tree, error) {
	if t := s.trees.get(id); t != nil {
		return t, nil
	}
	var kept []byte
	if err := q.QueryRowContext(ctx, `SELECT leaves FROM batches WHERE id = ?`, id).Scan(&kept); err != nil {
		return nil, fmt.Errorf("store: batch %d: %w", id, err)
	}
	var (
		t   *merkle.Tree
		err error
	)
	if kept != nil {
		// Some of its evidence was archived (keepLeaves).
		t, err = merkle.FromLeafHashes(splitHashes(kept))
	} else {
		var leaves [][]byte
		if leaves, err = batchLeaves(ctx, q, id); err != nil {
			return nil, fmt.Errorf("store: leaves of batch %d: %w", id, err)
		}
		t, err = merkle.Build(leaves)
	}
	if err != nil {
		return nil, fmt.Errorf("store: tree of batch %d: %w", id, err)
	}
	s.trees.put(id, t)
	return t, nil
}

// BatchLeaves returns the Merkle tree leaves of a batch's evidence in leaf
// order: each evidence's salt followed by its digest, or the digest alone for
// evidence stored before salts (receipt.Leaf).
func (s Anchors) BatchLeaves(ctx context.Context, id int64) ([][]byte, error) {
	out, err := batchLeaves(ctx, s.r, id)
	if err != nil {
		return nil, fmt.Errorf("store: leaves of batch %d: %w", id, err)
	}
	return out, nil
}

func batchLeaves(ctx context.Context, q querier, id int64) ([][]byte, error) {
	rows, err := q.QueryContext(ctx, `SELECT e.salt, e.digest FROM `+batchMembers("?1")+` m JOIN evidence e ON e.seq = m.seq
		ORDER BY m.leaf`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var salt, digest []byte
		if err := rows.Scan(&salt, &digest); err != nil {
			return nil, err
		}
		out = append(out, append(salt, digest...))
	}
	return out, rows.Err()
}
