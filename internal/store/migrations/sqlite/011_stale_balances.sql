-- Balances while a network retries (docs/backfill.md, "Finish"): a
-- network's computed balances stay readable after its item goes back
-- to work, marked stale until the wallet's finishing step recomputes
-- them; computed_at is when they were computed (0: never). Balances
-- computed before are taken as computed at their last update; rows
-- still waiting for their first computation are stale.

ALTER TABLE wallet_balances ADD COLUMN stale INTEGER NOT NULL DEFAULT 0;
ALTER TABLE wallet_balances ADD COLUMN computed_at INTEGER NOT NULL DEFAULT 0;
UPDATE wallet_balances SET computed_at = updated_at WHERE computed != '';
UPDATE wallet_balances SET stale = 1 WHERE computed = '';
