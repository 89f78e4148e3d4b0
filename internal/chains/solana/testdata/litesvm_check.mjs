// Executes one Solana wire transaction in LiteSVM (the real Solana runtime,
// with the real SPL Memo program among its default programs) and prints
// {"ok", "err", "logs", "computeUnits"} as one JSON line.
//
// usage: node litesvm_check.mjs <payer-pubkey-base58> [<tx-base64>]
//        (the transaction is read from stdin when not given)
//
// The payer gets an airdrop first. The blockhash check is off, so any
// blockhash signed into the transaction is accepted; signatures are verified.
// litesvm and @solana/kit are resolved through NODE_PATH
// (e.g. NODE_PATH=.tools/npm/node_modules).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const { LiteSVM, FailedTransactionMetadata } = require("litesvm");
const kit = require("@solana/kit");

// Fieldless transaction errors arrive as numbers: litesvm's
// TransactionErrorFieldless is a TypeScript const enum, absent at runtime.
// Names in its order (litesvm 1.5.0, dist/internal.d.ts).
const fieldless = [
  "AccountInUse", "AccountLoadedTwice", "AccountNotFound", "ProgramAccountNotFound",
  "InsufficientFundsForFee", "InvalidAccountForFee", "AlreadyProcessed", "BlockhashNotFound",
  "CallChainTooDeep", "MissingSignatureForFee", "InvalidAccountIndex", "SignatureFailure",
  "InvalidProgramForExecution", "SanitizeFailure", "ClusterMaintenance", "AccountBorrowOutstanding",
  "WouldExceedMaxBlockCostLimit", "UnsupportedVersion", "InvalidWritableAccount",
  "WouldExceedMaxAccountCostLimit", "WouldExceedAccountDataBlockLimit", "TooManyAccountLocks",
  "AddressLookupTableNotFound", "InvalidAddressLookupTableOwner", "InvalidAddressLookupTableData",
  "InvalidAddressLookupTableIndex", "InvalidRentPayingAccount", "WouldExceedMaxVoteCostLimit",
  "WouldExceedAccountDataTotalLimit", "MaxLoadedAccountsDataSizeExceeded", "ResanitizationNeeded",
  "InvalidLoadedAccountsDataSizeLimit", "UnbalancedTransaction", "ProgramCacheHitMaxLimit",
  "CommitCancelled",
];

// errName names a transaction error.
function errName(e) {
  if (typeof e === "number") {
    return fieldless[e] ?? `TransactionError(${e})`;
  }
  return String(e?.toString?.() ?? e);
}

function out(v) {
  process.stdout.write(JSON.stringify(v) + "\n");
}

const [payer, txArg] = process.argv.slice(2);
if (!payer) {
  out({ ok: false, err: "usage: litesvm_check.mjs <payer-pubkey> [<tx-base64>]", logs: [] });
  process.exit(2);
}
const txB64 = (txArg ?? readFileSync(0, "utf8")).trim();

let tx;
try {
  const bytes = new Uint8Array(Buffer.from(txB64, "base64"));
  tx = kit.getTransactionDecoder().decode(bytes);
} catch (e) {
  out({ ok: false, err: "decode: " + String(e?.message ?? e), logs: [] });
  process.exit(0);
}

const svm = new LiteSVM().withBlockhashCheck(false).withSigverify(true);
const drop = svm.airdrop(kit.address(payer), kit.lamports(10_000_000_000n));
if (drop instanceof FailedTransactionMetadata) {
  out({ ok: false, err: "airdrop: " + drop.toString(), logs: [] });
  process.exit(0);
}

let res;
try {
  res = svm.sendTransaction(tx);
} catch (e) {
  out({ ok: false, err: "send: " + String(e?.message ?? e), logs: [] });
  process.exit(0);
}
if (res instanceof FailedTransactionMetadata) {
  const meta = res.meta();
  out({ ok: false, err: errName(res.err()), logs: meta.logs(), computeUnits: Number(meta.computeUnitsConsumed()) });
} else {
  out({ ok: true, err: null, logs: res.logs(), computeUnits: Number(res.computeUnitsConsumed()) });
}
