-- Receipts version 2 (docs/receipts.md): a random salt per
-- evidence, hashed into its leaf so an audit path reveals no other
-- evidence's digest (NULL for evidence taken in before: their leaves
-- stay the bare digests and their receipts version 1); per batch the
-- network the anchor is on (CAIP-2), its block's hash and the finality
-- rule it was confirmed by.

ALTER TABLE evidence ADD COLUMN salt BLOB;
ALTER TABLE batches ADD COLUMN network TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN block_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN finality TEXT NOT NULL DEFAULT '';
