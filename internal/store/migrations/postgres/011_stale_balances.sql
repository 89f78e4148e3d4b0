-- Balances while a network retries (see sqlite/011_stale_balances.sql).

ALTER TABLE wallet_balances ADD COLUMN stale BOOLEAN NOT NULL DEFAULT FALSE,
	ADD COLUMN computed_at BIGINT NOT NULL DEFAULT 0;
UPDATE wallet_balances SET computed_at = updated_at WHERE computed != '';
UPDATE wallet_balances SET stale = TRUE WHERE computed = '';
