-- Receipts version 2 (salts; network, block hash and finality per batch).

ALTER TABLE evidence ADD COLUMN salt BYTEA;
ALTER TABLE batches ADD COLUMN network TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN block_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN finality TEXT NOT NULL DEFAULT '';
