// Package config is the one home of every keeper knob: a struct with
// defaults, the environment variable that sets each field and the flag that
// overrides it. Precedence: flag > environment > default.
package config

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/keeperhq/keeper/internal/urlpolicy"
	"github.com/keeperhq/keeper/receipt"
)

// Config holds every knob of every keeper command.
type Config struct {
	DataDir     string
	StoreURL    string
	HTTPAddr    string
	MetricsAddr string
	HealthAddr  string // empty: DefaultWorkerHealthAddr for `keeper worker`, the API's address for the others
	LogLevel    string
	LogFormat   string

	Chains           []string
	StubConfirmDelay time.Duration

	PollInterval  time.Duration
	ConfirmPoll   time.Duration
	BatchMaxItems int
	BatchMaxWait  time.Duration
	BatchMinGap   time.Duration
	MaxQueued     int

	// The polling budget (docs/chains.md, Polling budget): per chain, how often a
	// batch awaiting finality is looked up and the head probed.
	EtherlinkPoll, SolanaPoll ChainPoll

	// AllowPrivateURLs lets URLs callers hand keeper (epoch sources,
	// webhooks) be http:// and reach private addresses.
	AllowPrivateURLs bool
	// Webhooks: how long and how often a delivery is retried, and after how
	// long without a successful delivery an endpoint is disabled.
	Webhook        WebhookConfig
	AnchorInterval time.Duration // per chain, least time between two batches (0: none)
	// The evidence log (docs/log.md).
	Log LogConfig
	// Per-chain overrides of AnchorInterval.
	EtherlinkInterval, SolanaInterval, StubInterval OptionalDuration
	MaxPending                                      int
	MaxBacklog                                      int           // 0: 4 × MaxPending
	IntakeWait                                      time.Duration // priority 1–5 waits this long for room at MaxBacklog
	MaxBodyBytes                                    int64
	MaxBatchBodyBytes                               int64
	MaxAttempts                                     int
	RetryBase                                       time.Duration
	RetryCap                                        time.Duration
	RetryJitter                                     time.Duration
	SubmitTimeout                                   time.Duration
	ConfirmTimeout                                  time.Duration
	DrainTimeout                                    time.Duration
	ActivityWorkers                                 int
	// Retention: confirmed evidence older than this moves to the receipts
	// archive in ArchiveDir (0: never).
	EvidenceRetention time.Duration
	ArchiveDir        string // empty: <data-dir>/receipts-archive

	PprofAddr string

	APIToken     string
	APITokenFile string
	MetricsOpen  bool
	MaxInFlight  int

	CodecKeyFile     string   // empty: Temporal payloads are not encrypted
	CodecCORSOrigins []string // Web UI origins allowed to call /codec from a browser

	EVM      EVMConfig
	Solana   SolanaConfig
	Epochs   EpochConfig
	Backfill BackfillConfig

	Versioning VersioningConfig

	HTTP HTTPConfig

	// Dev is read by the dev binary's commands only (`keeper dev`,
	// `devserver`, `devchains`, `bench`): the production commands neither
	// bind its flags nor look at it.
	Dev DevConfig
}

// HTTPConfig is the API server's connection timeouts (5 s read, 5 s write,
// 60 s idle by default: a client that stalls mid-request or mid-answer
// frees its connection within seconds; docs/api.md). LongRequest replaces read and write for the routes
// that may move megabytes in one request (starter's longRoutes).
type HTTPConfig struct {
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	LongRequest  time.Duration
}

// EVMConfig configures the EtherLink (EVM) adapter.
type EVMConfig struct {
	Network         string // etherlink-mainnet | etherlink-testnet | custom (NetworkPresets)
	RPCURL          string // empty: `keeper dev` starts a local chain, other commands use http://127.0.0.1:8545
	KeyFile         string // empty: the local chain's funded dev key in <data-dir>/chains
	ChainID         int64
	Confirmations   int
	ResubmitTimeout time.Duration
	FeeCeilingGwei  int64
	NoTip           bool          // tip 0, max fee from the node's base fee (EtherLink ignores tips)
	BlockTime       time.Duration // the chain's block time: an anchor the node no longer knows is re-signed after evm.DropBlocks of it; 0: after ResubmitTimeout only
	FinalityStall   time.Duration // a `finalized` block still this long while `latest` moves is reported
	RPCConnections  int
	RPCRate         int
	RPC             RPCEndpoints
}

// HasEndpoint reports whether an EtherLink endpoint is configured (one URL
// or several); without one `keeper dev` runs a local chain.
func (e EVMConfig) HasEndpoint() bool { return e.RPCURL != "" || len(e.RPC.URLs) > 0 }

// HasEndpoint reports whether a Solana endpoint is configured (one URL or
// several); without one `keeper dev` runs a local devnet.
func (s SolanaConfig) HasEndpoint() bool { return s.RPCURL != "" || len(s.RPC.URLs) > 0 }

// RPCEndpoints are the several providers of one chain (chains/rpcpool).
type RPCEndpoints struct {
	URLs   []string // more than one: a pool; empty: the single RPC URL
	Trust  string   // "all" (every healthy endpoint must agree on a receipt) or 1-based positions in URLs, e.g. "1,3"
	MaxLag int      // blocks or slots behind the best head before an endpoint is unhealthy; 0: the chain's default
}

// TrustPositions reads Trust: nil for "all".
func (r RPCEndpoints) TrustPositions() ([]int, error) {
	if t := strings.TrimSpace(r.Trust); t == "" || t == "all" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(r.Trust, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > max(len(r.URLs), 1) {
			return nil, fmt.Errorf("%q is not all or positions in the URL list (1 to %d)", r.Trust, max(len(r.URLs), 1))
		}
		out = append(out, n)
	}
	return out, nil
}

// validate checks the list against the single URL setting.
func (r RPCEndpoints) validate(single, prefix string) error {
	if len(r.URLs) > 0 && single != "" && single != r.URLs[0] {
		return fmt.Errorf("%s_RPC_URL and %s_RPC_URLS are both set: set only the list (its first endpoint is the one logged and dialled first)", prefix, prefix)
	}
	for i, u := range r.URLs {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("%s_RPC_URLS: endpoint %d is not an http(s) URL", prefix, i+1)
		}
	}
	if _, err := r.TrustPositions(); err != nil {
		return fmt.Errorf("%s_RPC_TRUST: %v", prefix, err)
	}
	if r.MaxLag < 0 {
		return fmt.Errorf("%s_RPC_MAX_LAG must not be negative", prefix)
	}
	return nil
}

// SolanaConfig configures the Solana adapter.
type SolanaConfig struct {
	Cluster        string // mainnet-beta | devnet | testnet | custom (SolanaClusters)
	RPCURL         string // empty: `keeper dev` starts a local devnet, other commands use http://127.0.0.1:8899
	KeyFile        string // empty: the local devnet's funded fee payer in <data-dir>/chains
	Commitment     string
	PriorityFee    int64 // micro-lamports per compute unit: the price with MaxPriorityFee 0, else the least one
	MaxPriorityFee int64 // cap of the price read from getRecentPrioritizationFees; 0: pay PriorityFee as given
	RPCConnections int
	RPCRate        int
	RPC            RPCEndpoints
}

// EpochConfig configures reward epochs (docs/epochs.md).
type EpochConfig struct {
	MaxInFlight     int           // epochs queued or computing at once; the next gets 429
	Duration        time.Duration // epoch_duration: an epoch gets half of it (or the caller's sooner deadline)
	Heartbeat       time.Duration // a long epoch step whose worker stops heartbeating is retried after this long
	ArtifactDir     string        // empty: <data-dir>/artifacts
	LedgerURL       string        // empty: the built-in ledger in keeper's store
	UpstreamTimeout time.Duration // an accounting source or ledger call without progress for this long is retried
	AcceptTimeout   time.Duration // compute answers 503 when Temporal has not accepted the workflow within this long
}

// ArtifactDirOrDefault is where epoch artifacts go.
func (c *Config) ArtifactDirOrDefault() string {
	return cmp.Or(c.Epochs.ArtifactDir, filepath.Join(c.DataDir, "artifacts"))
}

// ArchiveDirOrDefault is where retention writes the receipts archive.
func (c *Config) ArchiveDirOrDefault() string {
	return cmp.Or(c.ArchiveDir, filepath.Join(c.DataDir, "receipts-archive"))
}

// Where the local chains of `keeper dev` keep their funded keys: the
// defaults of KEEPER_EVM_KEY_FILE and KEEPER_SOLANA_KEY_FILE. The local chains
// (dev/localnet) write them; the adapters read them.
const (
	DevKeyDir            = "chains"
	DevEVMKeyFileName    = "devchain.key"
	DevSolanaKeyFileName = "solana-devnet-payer.json"
)

// EVMKeyFileOrDefault is the EtherLink signer's key file.
func (c *Config) EVMKeyFileOrDefault() string {
	return cmp.Or(c.EVM.KeyFile, filepath.Join(c.DataDir, DevKeyDir, DevEVMKeyFileName))
}

// SolanaKeyFileOrDefault is the Solana fee payer's key file.
func (c *Config) SolanaKeyFileOrDefault() string {
	return cmp.Or(c.Solana.KeyFile, filepath.Join(c.DataDir, DevKeyDir, DevSolanaKeyFileName))
}

// The anchor cadence (docs/anchoring.md, cadence). In production a chain
// gets at most one new batch a minute: 60 anchor transactions an hour, 1,440
// a day, whatever the load. `keeper dev` anchors about once per local block.
const (
	DefaultAnchorInterval = time.Minute
	DevAnchorInterval     = 500 * time.Millisecond
)

// LogConfig is the evidence log's settings.
type LogConfig struct {
	Origin             string        // the log's name in its checkpoints
	KeyFile            string        // its note signer key; empty: DefaultLogKeyFile in the data directory
	CheckpointInterval time.Duration // longest time between checkpoints while the log grows
}

// The evidence log's defaults (docs/log.md): `keeper dev` signs a checkpoint
// twice a second, a node once a second, while the log grows.
const (
	DefaultLogOrigin             = "keeper.localhost/log"
	DefaultLogCheckpointInterval = time.Second
	DevLogCheckpointInterval     = 500 * time.Millisecond
	DefaultLogKeyFileName        = "log-signer.key"
)

// LogKeyFileOrDefault is the log's signing key file.
func (c *Config) LogKeyFileOrDefault() string {
	return cmp.Or(c.Log.KeyFile, filepath.Join(c.DataDir, DevKeyDir, DefaultLogKeyFileName))
}

// OptionalDuration is a duration setting that may be left unset.
type OptionalDuration struct {
	D   time.Duration
	Set bool
}

// DevCadence gives `keeper dev` (and `keeper bench`) its quick feel: unless
// set in the environment or by a flag (explicit reports whether a flag was
// given), a chain anchors about once per local block and the log signs a
// checkpoint twice a second.
func (c *Config) DevCadence(explicit func(flag string) bool) {
	if !explicit("anchor-interval") && os.Getenv("KEEPER_ANCHOR_INTERVAL") == "" {
		c.AnchorInterval = DevAnchorInterval
	}
	if !explicit("log-checkpoint-interval") && os.Getenv("KEEPER_LOG_CHECKPOINT_INTERVAL") == "" {
		c.Log.CheckpointInterval = DevLogCheckpointInterval
	}
}

// evmNetworks are the EVM network presets: what EtherLink documents for its
// networks (docs.etherlink.com): chain ids, finality at the `finalized`
// block (the last block posted to and confirmed on Tezos), the public
// endpoint's 1,000 requests a minute and eth_getLogs answers of at most 500
// blocks and 5,000 logs; a sequencer that ignores the tip and drops an
// underpriced transaction silently, about 500 ms blocks; a `finalized` block
// that normally follows within minutes, so 10 minutes without it moving is
// a stall.
var evmNetworks = map[string]struct {
	chainID       int64
	rate          int
	logBlocks     int
	maxLogs       int
	blockTime     time.Duration
	finalityStall time.Duration
}{
	"etherlink-mainnet": {chainID: 42793, rate: 16, logBlocks: 500, maxLogs: 5000, blockTime: 500 * time.Millisecond, finalityStall: 10 * time.Minute},
	"etherlink-testnet": {chainID: 127823, rate: 16, logBlocks: 500, maxLogs: 5000, blockTime: 500 * time.Millisecond, finalityStall: 10 * time.Minute},
}

// NetworkPresets applies KEEPER_EVM_NETWORK's preset, and the polling
// budget of KEEPER_SOLANA_CLUSTER's public clusters, to every setting they
// cover that was not given explicitly (in the environment, or as a flag
// changed reports).
func (c *Config) NetworkPresets(changed func(flag string) bool) {
	given := map[string]bool{}
	for _, k := range c.Knobs() {
		given[k.Env] = os.Getenv(k.Env) != "" || (changed != nil && changed(k.Flag))
	}
	c.pollPresets(given)
	n, ok := evmNetworks[c.EVM.Network]
	if !ok {
		return
	}
	if !given["KEEPER_EVM_CHAIN_ID"] {
		c.EVM.ChainID = n.chainID
	}
	if !given["KEEPER_EVM_CONFIRMATIONS"] {
		c.EVM.Confirmations = 0
	}
	if !given["KEEPER_ETHERLINK_RPC_RATE"] {
		c.EVM.RPCRate = n.rate
	}
	if !given["KEEPER_BACKFILL_EVM_CHUNK_BLOCKS"] {
		c.Backfill.EVMChunkBlocks = min(c.Backfill.EVMChunkBlocks, n.logBlocks)
	}
	if !given["KEEPER_BACKFILL_EVM_MAX_LOGS"] {
		c.Backfill.EVMMaxLogs = min(c.Backfill.EVMMaxLogs, n.maxLogs)
	}
	if !given["KEEPER_EVM_NO_TIP"] {
		c.EVM.NoTip = true
	}
	if !given["KEEPER_EVM_BLOCK_MS"] {
		c.EVM.BlockTime = n.blockTime
	}
	if !given["KEEPER_EVM_FINALITY_STALL_MS"] {
		c.EVM.FinalityStall = n.finalityStall
	}
}

// SolanaClusters are the values of KEEPER_SOLANA_CLUSTER: the public
// clusters, whose genesis hash the Solana adapter checks at start, and
// custom, which checks nothing.
var SolanaClusters = []string{"mainnet-beta", "devnet", "testnet", "custom"}

// DevURLs lets `keeper dev` fetch from local servers (a usage source on
// 127.0.0.1), unless KEEPER_WEBHOOK_ALLOW_PRIVATE was set (explicit).
func (c *Config) DevURLs(explicit bool) {
	if !explicit && os.Getenv("KEEPER_WEBHOOK_ALLOW_PRIVATE") == "" {
		c.AllowPrivateURLs = true
	}
}

// Outbound is the policy for URLs callers hand keeper.
func (c *Config) Outbound() urlpolicy.Policy {
	return urlpolicy.Policy{AllowPrivate: c.AllowPrivateURLs}
}

// AnchorIntervalFor is the least time between two batches of chain: its own
// KEEPER_<CHAIN>_ANCHOR_INTERVAL when set, else KEEPER_ANCHOR_INTERVAL.
func (c *Config) AnchorIntervalFor(chain string) time.Duration {
	var o OptionalDuration
	switch chain {
	case "etherlink":
		o = c.EtherlinkInterval
	case "solana":
		o = c.SolanaInterval
	case "stub":
		o = c.StubInterval
	}
	if o.Set {
		return o.D
	}
	return c.AnchorInterval
}

// Knob describes one setting for flags, environment and the configuration table (docs/configuration.md).
type Knob struct {
	Flag, Env, Default string
	Uses               Uses // the commands that read it, and so take its flag
	Help               string
	ptr                any
}

// Uses is a set of the parts of keeper that read a knob. A command binds
// the flags of the knobs its parts read and no others (Bind), so its --help
// lists what it uses; the environment sets every knob whatever the command.
type Uses uint16

const (
	Base        Uses = 1 << iota // every command that reads the configuration: the data directory, logging
	Store                        // what opens keeper's store (the node, `keeper log export`, `log trust`)
	API                          // `keeper api`: the HTTP API, intake and the dispatchers
	Worker                       // `keeper worker`: the Temporal workers, the log's sequencer
	LogSigner                    // what signs the evidence log (the worker, `keeper log keygen`, `log trust retire`)
	LogMirror                    // `keeper log export --follow`
	DevServer                    // the embedded Temporal server (`keeper dev`, `devserver`)
	LocalChains                  // the local chains (`keeper dev`, `devchains`)
	Profiling                    // Go's profiles, served by `keeper dev` and `keeper bench`

	// Node is what `keeper api` and `keeper worker` both read.
	Node = API | Worker
	// Everything is the whole stack `keeper dev` and `keeper bench` run.
	Everything = Base | Store | Node | LogSigner | LogMirror | DevServer | LocalChains | Profiling
)

// Knobs lists every setting of c, in the order of docs/configuration.md.
func (c *Config) Knobs() []Knob {
	return slices.Concat(c.nodeKnobs(), c.batchKnobs(), c.webhookKnobs(), c.intakeKnobs(), c.epochKnobs(), c.serverKnobs(), c.evmKnobs(), c.solanaKnobs(), c.backfillKnobs())
}

// nodeKnobs are the settings of where keeper keeps its records, serves, logs, and which chains it anchors on and how often it polls them.
func (c *Config) nodeKnobs() []Knob {
	return []Knob{
		{"data-dir", "KEEPER_DATA_DIR", "./.keeper", Base,
			"directory of keeper.db (keeper's records, unless KEEPER_STORE_URL is set) and, for " +
				"`keeper dev`, temporal.db",
			&c.DataDir},
		{"store-url", "KEEPER_STORE_URL", "", Store,
			"keeper's records in PostgreSQL instead, shared by every node given the same URL: " +
				"postgres://user:password@host:5432/database?sslmode=require (search_path=… picks a schema); " +
				"empty: SQLite keeper.db in the data directory",
			&c.StoreURL},
		{"http-addr", "KEEPER_HTTP_ADDR", "127.0.0.1:8081", API,
			"address of the HTTP API, /health, /readyz and /metrics",
			&c.HTTPAddr},
		{"metrics-addr", "KEEPER_METRICS_ADDR", "", Node,
			"also serve /metrics, /health and /readyz on this address, e.g. 127.0.0.1:9464 to keep scrapes " +
				"off the API's address; empty: not",
			&c.MetricsAddr},
		{"health-addr", "KEEPER_HEALTH_ADDR", "", Node,
			"where `keeper worker`, which has no API, serves /health, /readyz and /metrics (ready while it " +
				"polls its task queues: its Temporal workers started and the server answers, and its store and " +
				"chains answer); empty: " + DefaultWorkerHealthAddr +
				", which is also the API's default: a worker beside `keeper api` on one host needs another. " +
				"`keeper api` and `keeper dev` serve them on KEEPER_HTTP_ADDR, and here too when set to " +
				"another address",
			&c.HealthAddr},
		{"log-level", "KEEPER_LOG_LEVEL", "info", Base,
			"debug, info, warn or error",
			&c.LogLevel},
		{"log-format", "KEEPER_LOG_FORMAT", "", Base,
			"json or text; empty: text for `keeper dev` and the other local tools, json for " +
				"`keeper worker` and `keeper api`",
			&c.LogFormat},
		{"chains", "KEEPER_CHAINS", "etherlink,solana", Node | LocalChains,
			"chains evidence may ask for (comma-separated): etherlink, solana, stub",
			&c.Chains},
		{"stub-confirm-ms", "KEEPER_STUB_CONFIRM_MS", "1000", Node,
			"stub chain: time from broadcast to finality",
			msKnob{&c.StubConfirmDelay}},
		{"poll-ms", "KEEPER_POLL_MS", "5000", Node,
			"dispatcher safety-net sweep; intake wakes it at once",
			msKnob{&c.PollInterval}},
		{"confirm-poll-ms", "KEEPER_CONFIRM_POLL_MS", "1000", Node,
			"how often the finality watcher looks up a batch awaiting finality (chains with a batched " +
				"status poller: once per poll round); each chain's unless KEEPER_<CHAIN>_CONFIRM_POLL_MS",
			msKnob{&c.ConfirmPoll}},
		{"etherlink-confirm-poll-ms", "KEEPER_ETHERLINK_CONFIRM_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on etherlink, a status round (one JSON-RPC " +
				"batch request per 100 transactions) at least this often; empty: KEEPER_CONFIRM_POLL_MS " +
				"(etherlink presets: " + ms(etherlinkPoll.confirm) + ")",
			optMsKnob{&c.EtherlinkPoll.Confirm}},
		{"etherlink-head-poll-ms", "KEEPER_ETHERLINK_HEAD_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on etherlink, eth_blockNumber this often, and a " +
				"new block starts a status round at once (docs/chains.md, Polling budget); empty: a quarter of " +
				"the chain's confirm poll (etherlink presets: " + ms(etherlinkPoll.head) +
				"); 0 = no head probe, rounds on the confirm poll alone",
			optMsKnob{&c.EtherlinkPoll.Head}},
		{"solana-confirm-poll-ms", "KEEPER_SOLANA_CONFIRM_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on solana, a status round (getSignatureStatuses " +
				"of up to 256 signatures) at least this often; empty: KEEPER_CONFIRM_POLL_MS (public clusters, " +
				"KEEPER_SOLANA_CLUSTER other than custom: " + ms(solanaPoll.confirm) + ")",
			optMsKnob{&c.SolanaPoll.Confirm}},
		{"solana-head-poll-ms", "KEEPER_SOLANA_HEAD_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on solana, getSlot this often, and a new slot " +
				"starts a status round at once; empty: a quarter of the chain's confirm poll (public clusters: " +
				ms(solanaPoll.head) + "); 0 = no head probe",
			optMsKnob{&c.SolanaPoll.Head}},
	}
}

// batchKnobs are the settings of how evidence is batched, the cadence of anchors and the evidence log.
func (c *Config) batchKnobs() []Knob {
	return []Knob{
		{"batch-max-items", "KEEPER_BATCH_MAX_ITEMS", "16384", API,
			"largest batch: what arrives in one anchor interval shares one transaction and one Merkle tree " +
				"up to this many (a receipt's audit path is log2 of its batch's size: 10 hashes at 1,024, 14 " +
				"at 16,384); 1 = one workflow and one transaction per evidence",
			&c.BatchMaxItems},
		{"batch-max-wait-ms", "KEEPER_BATCH_MAX_WAIT_MS", "200", API,
			"longest a batch grows while an earlier one awaits submission",
			msKnob{&c.BatchMaxWait}},
		{"anchor-interval", "KEEPER_ANCHOR_INTERVAL", DefaultAnchorInterval.String(), API,
			"cadence: per chain at most one new batch per interval, whatever the load, so anchor " +
				"transactions per chain per hour stay ≤ 3600 ÷ interval (plus one per full batch of " +
				"KEEPER_BATCH_MAX_ITEMS); the first evidence after a quiet interval goes at once, priority 1 " +
				"skips the wait. `keeper dev` uses " + DevAnchorInterval.String() +
				" (a local block) unless set; 0 = no interval",
			&c.AnchorInterval},
		{"log-origin", "KEEPER_LOG_ORIGIN", DefaultLogOrigin, LogSigner,
			"the evidence log's origin, the name in its checkpoints and its key: a scheme-less URL where " +
				"the log is served, such as keeper.example.org/log (docs/log.md)",
			&c.Log.Origin},
		{"log-key-file", "KEEPER_LOG_KEY_FILE", "", LogSigner,
			"the evidence log's signing key (a note signer key, `keeper log keygen` makes one); empty: " + DevKeyDir +
				"/" + DefaultLogKeyFileName +
				" in the data directory, made at first start. Every worker of a deployment needs the same key",
			&c.Log.KeyFile},
		{"log-checkpoint-interval", "KEEPER_LOG_CHECKPOINT_INTERVAL", DefaultLogCheckpointInterval.String(), Worker | LogMirror,
			"longest time between two signed checkpoints while the log grows. `keeper dev` uses " +
				DevLogCheckpointInterval.String() + " unless set",
			&c.Log.CheckpointInterval},
		{"etherlink-anchor-interval", "KEEPER_ETHERLINK_ANCHOR_INTERVAL", "", API,
			"KEEPER_ANCHOR_INTERVAL for etherlink alone (empty: the common one)",
			&c.EtherlinkInterval},
		{"solana-anchor-interval", "KEEPER_SOLANA_ANCHOR_INTERVAL", "", API,
			"KEEPER_ANCHOR_INTERVAL for solana alone (empty: the common one)",
			&c.SolanaInterval},
		{"stub-anchor-interval", "KEEPER_STUB_ANCHOR_INTERVAL", "", API,
			"KEEPER_ANCHOR_INTERVAL for the stub chain alone (empty: the common one)",
			&c.StubInterval},
		{"batch-min-gap-ms", "KEEPER_BATCH_MIN_GAP_MS", "500", API,
			"under load (a chain's last batch held more than one evidence), least time between two of its " +
				"batches, about a block: anchors closer than that land in one block anyway; a lone evidence " +
				"still goes out at once",
			msKnob{&c.BatchMinGap}},
		{"max-queued-batches", "KEEPER_MAX_QUEUED_BATCHES", "32", API,
			"back-pressure: per chain, batches Temporal has work for (not counting those that only await " +
				"finality) at which the dispatcher forms no more; further evidence waits in the store, so " +
				"under overload the Temporal server works at its ceiling instead of queuing tasks it cannot " +
				"serve (0 = no limit)",
			&c.MaxQueued},
	}
}

// webhookKnobs are the settings of webhook delivery, retention and archived receipts.
func (c *Config) webhookKnobs() []Knob {
	return []Knob{
		{"webhook-allow-private", "KEEPER_WEBHOOK_ALLOW_PRIVATE", "false", Node,
			"let URLs a caller hands keeper (an epoch's source; webhook endpoints) be http:// and reach " +
				"loopback, private and link-local addresses; otherwise only https:// to public addresses, " +
				"checked again at connect time after DNS, with no redirects followed. `keeper dev` sets it " +
				"unless given",
			&c.AllowPrivateURLs},
		{"webhook-retry-window", "KEEPER_WEBHOOK_RETRY_WINDOW", "72h", Node,
			"how long a webhook delivery is retried before it is marked failed (re-drivable with POST " +
				"/v1/webhooks/{id}/deliveries/{delivery_id}/retry); KEEPER_WEBHOOK_RETRY_FOR, its former name, " +
				"still works (deprecated)",
			&c.Webhook.RetryWindow},
		{"webhook-retry-base", "KEEPER_WEBHOOK_RETRY_BASE", "5s", Node,
			"wait before a failed webhook delivery's second attempt; each later wait doubles, up to " +
				"KEEPER_WEBHOOK_RETRY_CAP, less up to 20 % jitter; also the shortest wait a receiver's " +
				"Retry-After can ask for",
			&c.Webhook.RetryBase},
		{"webhook-retry-cap", "KEEPER_WEBHOOK_RETRY_CAP", "1h", Node,
			"longest wait between two attempts of a webhook delivery, a receiver's Retry-After included",
			&c.Webhook.RetryCap},
		{"webhook-timeout", "KEEPER_WEBHOOK_TIMEOUT", "10s", Node,
			"a webhook endpoint that has not answered within this long has failed the attempt",
			&c.Webhook.Timeout},
		{"webhook-disable-after", "KEEPER_WEBHOOK_DISABLE_AFTER", "72h", Worker,
			"a webhook whose deliveries have failed for this long without a success is disabled (logged, " +
				"counted in keeper_webhooks_disabled_total); POST /v1/webhooks/{id}/enable, or re-driving one " +
				"of its deliveries, enables it again (0 = never)",
			&c.Webhook.DisableAfter},
		{"webhook-rotation-grace", "KEEPER_WEBHOOK_ROTATION_GRACE", "24h", API,
			"after POST /v1/webhooks/{id}/rotate-secret, how long the replaced secret keeps signing " +
				"deliveries beside the new one (a request's `grace` overrides it); at most 168h, 0 = replace " + "at once",
			&c.Webhook.RotationGrace},
		{"evidence-retention", "KEEPER_EVIDENCE_RETENTION", "0", API,
			"retention: confirmed evidence taken in longer ago than this (e.g. 2160h for 90 days) moves " +
				"into the receipts archive and its rows are deleted; reading it then answers 410 naming the " +
				"archive file, and `keeper receipt --archive DIR` reads it from there. Its idempotency key " +
				"goes with it, so a key is de-duplicated for at least this long. 0 = keep everything",
			&c.EvidenceRetention},
		{"receipts-archive-dir", "KEEPER_RECEIPTS_ARCHIVE_DIR", "", API,
			"retention: directory of the receipts archive (gzip files of one JSON receipt per line, " +
				"written whole, never changed; back it up); with several API nodes, a directory they share. " +
				"Empty: <data-dir>/receipts-archive",
			&c.ArchiveDir},
	}
}

// intakeKnobs are the settings of back-pressure on intake, request sizes, retries and activity limits.
func (c *Config) intakeKnobs() []Knob {
	return []Knob{
		{"max-pending", "KEEPER_MAX_PENDING", "10000", API,
			"pending evidence at or above which priority 6–10 gets 429 `overloaded`",
			&c.MaxPending},
		{"max-backlog", "KEEPER_MAX_BACKLOG", "0", API,
			"the ceiling of pending evidence, for every priority: at it priority 1–5 waits up to " +
				"KEEPER_INTAKE_WAIT for a batch to make room, then gets 429 `backlog_full`, so intake never " +
				"outruns batching by more than this; 0 = 4 × KEEPER_MAX_PENDING; at least KEEPER_MAX_PENDING",
			&c.MaxBacklog},
		{"intake-wait", "KEEPER_INTAKE_WAIT", "50ms", API,
			"how long intake of priority 1–5 waits for room at KEEPER_MAX_BACKLOG before answering 429, " +
				"well inside intake's 100 ms latency target (docs/anchoring.md); 0 = answer at once",
			&c.IntakeWait},
		{"max-body-bytes", "KEEPER_MAX_BODY_BYTES", "1048576", API,
			"largest request body (413 above)",
			&c.MaxBodyBytes},
		{"max-batch-body-bytes", "KEEPER_MAX_BATCH_BODY_BYTES", "18432000", API,
			"largest POST /v1/evidence/batch body (413 above); the default holds 1,000 items with 16 KiB " +
				"of metadata each",
			&c.MaxBatchBodyBytes},
		{"max-attempts", "KEEPER_MAX_ATTEMPTS", "0", API,
			"attempts per submit or confirm before the batch is dead-lettered; 0 = no limit: a transient " +
				"failure (an RPC provider down for hours) is retried on the backoff schedule for as long as it " +
				"lasts, and only permanent failures and repeated drops dead-letter (docs/retries.md)",
			&c.MaxAttempts},
		{"retry-base-ms", "KEEPER_RETRY_BASE_MS", "5000", Node,
			"retry delay base: min(base·2^attempt, cap) + jitter",
			msKnob{&c.RetryBase}},
		{"retry-cap-ms", "KEEPER_RETRY_CAP_MS", "300000", Node,
			"retry delay cap",
			msKnob{&c.RetryCap}},
		{"retry-jitter-ms", "KEEPER_RETRY_JITTER_MS", "1000", Worker,
			"uniform retry jitter upper bound",
			msKnob{&c.RetryJitter}},
		{"submit-timeout", "KEEPER_SUBMIT_TIMEOUT", "1m", API,
			"longest one SubmitAnchor attempt may take before Temporal retries it",
			&c.SubmitTimeout},
		{"confirm-timeout", "KEEPER_CONFIRM_TIMEOUT", "1h", API,
			"longest one ConfirmAnchor attempt awaits finality: an attempt no finality watcher completes " +
				"is retried after this long",
			&c.ConfirmTimeout},
		{"drain-timeout", "KEEPER_DRAIN_TIMEOUT", "10s", Node,
			"on SIGINT/SIGTERM, how long in-flight activities may finish",
			&c.DrainTimeout},
		{"activity-workers", "KEEPER_ACTIVITY_WORKERS", "64", Worker,
			"concurrent activities per worker process (the anchoring worker's local activities, submit and " +
				"record, under the same limit counted apart)",
			&c.ActivityWorkers},
	}
}

// epochKnobs are the settings of reward epochs and the HTTP server.
func (c *Config) epochKnobs() []Knob {
	return []Knob{
		{"max-epochs-in-flight", "KEEPER_MAX_EPOCHS_IN_FLIGHT", "64", API,
			"reward epochs queued or computing at once; one more gets 429 with Retry-After",
			&c.Epochs.MaxInFlight},
		{"epoch-duration", "KEEPER_EPOCH_DURATION", "1h", API,
			"an epoch must finish within half of this, or by the caller's `deadline` when sooner",
			&c.Epochs.Duration},
		{"epoch-heartbeat-ms", "KEEPER_EPOCH_HEARTBEAT_MS", "10000", API,
			"a long epoch step (fetch, emit intents) whose worker stops heartbeating is retried elsewhere " +
				"after this long",
			msKnob{&c.Epochs.Heartbeat}},
		{"artifact-dir", "KEEPER_ARTIFACT_DIR", "", Worker,
			"epoch artifacts (sealed inputs, payouts, run.json, commitment), shared by every epoch worker; " +
				"empty: <data-dir>/artifacts",
			&c.Epochs.ArtifactDir},
		{"ledger-url", "KEEPER_LEDGER_URL", "", Node,
			"settlement ledger that takes epoch intents (POST <url>/ledger/v1/intents); empty: keeper's " +
				"built-in ledger, kept in keeper's store and served at /ledger/v1",
			&c.Epochs.LedgerURL},
		{"upstream-timeout-ms", "KEEPER_UPSTREAM_TIMEOUT_MS", "5000", Worker,
			"an accounting-source or ledger call that makes no progress for this long is abandoned and " + "retried",
			msKnob{&c.Epochs.UpstreamTimeout}},
		{"compute-accept-timeout", "KEEPER_COMPUTE_ACCEPT_TIMEOUT", "2s", API,
			"`POST /rewarder/epochs/{id}/compute` answers within this long: 202 once Temporal accepted the " +
				"epoch's workflow, else 503 `temporal_unavailable` with Retry-After (the epoch stays queued; " +
				"the same request again starts or joins it)",
			&c.Epochs.AcceptTimeout},
		{"http-read-timeout", "KEEPER_HTTP_READ_TIMEOUT", "5s", API,
			"API server: longest time to read a request, headers and body (the routes of " +
				"KEEPER_HTTP_LONG_TIMEOUT excepted)",
			&c.HTTP.ReadTimeout},
		{"http-write-timeout", "KEEPER_HTTP_WRITE_TIMEOUT", "5s", API,
			"API server: longest time from a request's headers to the end of its answer (the routes of " +
				"KEEPER_HTTP_LONG_TIMEOUT excepted)",
			&c.HTTP.WriteTimeout},
		{"http-idle-timeout", "KEEPER_HTTP_IDLE_TIMEOUT", "60s", API,
			"API server: a keep-alive connection with no request for this long is closed",
			&c.HTTP.IdleTimeout},
		{"http-long-timeout", "KEEPER_HTTP_LONG_TIMEOUT", "60s", API,
			"API server: read and write time of the routes that may move megabytes in one request instead " +
				"of the two above: `POST /v1/evidence/batch`, `/v1/evidence` (pages of 1,000), transfers and " +
				"ledger-intent pages, `/codec`, `/metrics`",
			&c.HTTP.LongRequest},
	}
}

// serverKnobs are the settings of the embedded Temporal server, TLS, auth, pprof and the codec.
func (c *Config) serverKnobs() []Knob {
	return []Knob{
		{"dev-temporal-port", "KEEPER_DEV_TEMPORAL_PORT", "7233", DevServer,
			"the embedded Temporal frontend's port (`keeper dev`, `devserver`)",
			&c.Dev.TemporalPort},
		{"dev-ui-port", "KEEPER_DEV_UI_PORT", "8233", DevServer,
			"the embedded Temporal Web UI's port (`keeper dev`, `devserver`; 0 = no UI)",
			&c.Dev.UIPort},
		{"db", "KEEPER_DEV_TEMPORAL_DB", "", DevServer,
			"`keeper devserver` and `keeper dev`: run the embedded Temporal server on PostgreSQL: " +
				"postgres://user:password@host:5432/temporal (databases <name> and <name>_visibility, created " +
				"and set up when missing; query parameters such as sslmode=require go to the connection); " +
				"empty: SQLite temporal.db in the data directory",
			&c.Dev.TemporalDB},
		{"tls-cert", "KEEPER_DEV_TLS_CERT", "", DevServer,
			"`keeper devserver`: PEM certificate the embedded Temporal frontend serves TLS with (needs " +
				"--tls-key); empty: plaintext",
			&c.Dev.TLSCert},
		{"tls-key", "KEEPER_DEV_TLS_KEY", "", DevServer,
			"`keeper devserver`: PEM private key of --tls-cert",
			&c.Dev.TLSKey},
		{"tls-client-ca", "KEEPER_DEV_TLS_CLIENT_CA", "", DevServer,
			"`keeper devserver`: PEM CA bundle; when set, every Temporal client must present a certificate " +
				"it signed (mTLS)",
			&c.Dev.TLSClientCA},
		{"pprof", "KEEPER_PPROF_ADDR", "", Profiling,
			"`keeper dev` and `keeper bench`: serve Go's pprof profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; empty: off",
			&c.PprofAddr},
		{"api-token", "KEEPER_API_TOKEN", "", Node,
			"when set, /v1, /rewarder, /ledger and /codec routes need `Authorization: Bearer <token>` " +
				"(compared in constant time)",
			&c.APIToken},
		{"api-token-file", "KEEPER_API_TOKEN_FILE", "", Node,
			"file holding the API token (instead of KEEPER_API_TOKEN)",
			&c.APITokenFile},
		{"metrics-open", "KEEPER_METRICS_OPEN", "true", Node,
			"serve /metrics without the API token",
			&c.MetricsOpen},
		{"max-in-flight", "KEEPER_MAX_IN_FLIGHT", "256", API,
			"concurrent requests per route group; beyond it 503 busy at once",
			&c.MaxInFlight},
		{"codec-key-file", "KEEPER_CODEC_KEY_FILE", "", Node,
			"file of AES-256-GCM keys, one `<key-id> <base64 of 32 bytes>` per line: every Temporal " +
				"payload keeper writes is encrypted with the first key and read with any, and the API serves " +
				"/codec so the Web UI and the temporal CLI can show them. Every worker and API node needs the " +
				"same file; empty: payloads are plain",
			&c.CodecKeyFile},
		{"codec-cors-origins", "KEEPER_CODEC_CORS_ORIGINS", "", API,
			"Web UI origins (comma-separated, e.g. https://temporal.example) whose pages may call /codec; " +
				"`keeper dev` adds its own UI",
			&c.CodecCORSOrigins},
	}
}

// evmKnobs are the settings of EtherLink (EVM).
func (c *Config) evmKnobs() []Knob {
	return []Knob{
		{"evm-network", "KEEPER_EVM_NETWORK", "custom", Node,
			"etherlink-mainnet or etherlink-testnet: chain id, finality (the `finalized` block), RPC rate " +
				"(16/s), eth_getLogs range (500 blocks) and answer size (5,000 logs), no tip, 500 ms blocks " +
				"and a 10-minute finality stall as EtherLink documents them, unless set one by one; custom: " +
				"every setting as given",
			&c.EVM.Network},
		{"evm-rpc-url", "KEEPER_EVM_RPC_URL", "", Node | LocalChains,
			"EtherLink JSON-RPC endpoint; empty: `keeper dev` runs a local chain (others use " +
				"http://127.0.0.1:8545)",
			&c.EVM.RPCURL},
		{"evm-rpc-urls", "KEEPER_EVM_RPC_URLS", "", Node | LocalChains,
			"several EtherLink JSON-RPC providers, comma-separated, instead of KEEPER_EVM_RPC_URL: signed " +
				"transactions go to every healthy one, reads to the first healthy one, failing over " +
				"(docs/chains.md, Several RPC providers)",
			&c.EVM.RPC.URLs},
		{"evm-rpc-trust", "KEEPER_EVM_RPC_TRUST", "all", Node,
			"with several providers, whose receipts confirm an anchor: all (every healthy provider must " +
				"report the same receipt) or positions in KEEPER_EVM_RPC_URLS, e.g. 1 or 1,3",
			&c.EVM.RPC.Trust},
		{"evm-rpc-max-lag", "KEEPER_EVM_RPC_MAX_LAG", "10", Node,
			"with several providers, one whose head is more blocks than this behind the best is unhealthy: " +
				"no reads, no broadcasts, no say on receipts",
			&c.EVM.RPC.MaxLag},
		{"evm-key-file", "KEEPER_EVM_KEY_FILE", "", Node,
			"file holding the EtherLink signer's hex private key; empty: <data-dir>/chains/devchain.key " +
				"(the local chain's funded key)",
			&c.EVM.KeyFile},
		{"evm-chain-id", "KEEPER_EVM_CHAIN_ID", strconv.Itoa(receipt.LocalEVMChainID), Node | LocalChains,
			"chain id the EVM node must report, and the local chain's (`keeper dev`, `devchains`); default " +
				strconv.Itoa(receipt.LocalEVMChainID) + ", keeper dev's own, no public network's (etherlink presets: " +
				"mainnet 42793, testnet 127823)",
			&c.EVM.ChainID},
		{"evm-confirmations", "KEEPER_EVM_CONFIRMATIONS", "0", Node,
			"0: final at the node's `finalized` block; N: final N blocks deep (nodes without the tag)",
			&c.EVM.Confirmations},
		{"evm-resubmit-ms", "KEEPER_EVM_RESUBMIT_MS", "60000", Node,
			"an unmined anchor is re-signed with bumped fees after this long",
			msKnob{&c.EVM.ResubmitTimeout}},
		{"evm-fee-ceiling-gwei", "KEEPER_EVM_FEE_CEILING_GWEI", "1000", Node,
			"highest max fee per gas keeper will pay",
			&c.EVM.FeeCeilingGwei},
		{"evm-no-tip", "KEEPER_EVM_NO_TIP", "false", Node,
			"true: priority fee 0 and max fee twice the node's base fee (EtherLink's sequencer ignores " +
				"tips; etherlink presets: true); false: tip from eth_maxPriorityFeePerGas, max fee 2 × base " +
				"fee + tip",
			&c.EVM.NoTip},
		{"evm-block-ms", "KEEPER_EVM_BLOCK_MS", "0", Node,
			"the chain's block time: an anchor without receipt that the node no longer knows " +
				"(eth_getTransactionByHash null) 10 blocks after it was signed is re-signed on the same nonce " +
				"at the current price (etherlink presets: 500, so 5 s); 0: only after KEEPER_EVM_RESUBMIT_MS",
			msKnob{&c.EVM.BlockTime}},
		{"evm-finality-stall-ms", "KEEPER_EVM_FINALITY_STALL_MS", "1800000", Node,
			"a `finalized` block that has not moved for this long while `latest` has fails /readyz and " +
				"sets keeper_chain_finalized_stalled (etherlink presets: 600000, 10 minutes)",
			msKnob{&c.EVM.FinalityStall}},
		{"etherlink-rpc-connections", "KEEPER_ETHERLINK_RPC_CONNECTIONS", "4", Node,
			"concurrent status calls to the EVM endpoint",
			&c.EVM.RPCConnections},
		{"etherlink-rpc-rate", "KEEPER_ETHERLINK_RPC_RATE", "0", Node,
			"requests a second to the EVM endpoint, shared by the submitter, the status poller and the " +
				"backfill scanner (EtherLink's public endpoint allows 1,000 a minute: 16); a 429 pauses them " +
				"for its Retry-After; 0 = no cap",
			&c.EVM.RPCRate},
		{"dev-evm-port", "KEEPER_DEV_EVM_PORT", "8545", LocalChains,
			"JSON-RPC port of the local EVM chain (`keeper dev`, `devchains`)",
			&c.Dev.EVMPort},
		{"dev-evm-block-ms", "KEEPER_DEV_EVM_BLOCK_MS", "500", LocalChains,
			"block time of the local EVM chain (`keeper dev`, `devchains`); its timestamps follow the wall clock, so it seals " +
				"at most about a block a second (docs/chains.md)",
			msKnob{&c.Dev.EVMBlockTime}},
	}
}

// solanaKnobs are the settings of Solana.
func (c *Config) solanaKnobs() []Knob {
	return []Knob{
		{"solana-cluster", "KEEPER_SOLANA_CLUSTER", "custom", Node,
			"mainnet-beta, devnet or testnet: at start keeper reads the node's genesis hash " +
				"(getGenesisHash) and refuses a node on any other cluster; custom (local or private clusters): " +
				"no check",
			&c.Solana.Cluster},
		{"solana-rpc-url", "KEEPER_SOLANA_RPC_URL", "", Node | LocalChains,
			"Solana JSON-RPC endpoint; empty: `keeper dev` runs a local devnet (others use " +
				"http://127.0.0.1:8899)",
			&c.Solana.RPCURL},
		{"solana-rpc-urls", "KEEPER_SOLANA_RPC_URLS", "", Node | LocalChains,
			"several Solana JSON-RPC providers, comma-separated, instead of KEEPER_SOLANA_RPC_URL (as " +
				"KEEPER_EVM_RPC_URLS)",
			&c.Solana.RPC.URLs},
		{"solana-rpc-trust", "KEEPER_SOLANA_RPC_TRUST", "all", Node,
			"with several providers, whose signature statuses confirm an anchor: all or positions in " +
				"KEEPER_SOLANA_RPC_URLS",
			&c.Solana.RPC.Trust},
		{"solana-rpc-max-lag", "KEEPER_SOLANA_RPC_MAX_LAG", "150", Node,
			"with several providers, one whose slot is more than this behind the best is unhealthy " +
				"(Solana's getHealth uses 150)",
			&c.Solana.RPC.MaxLag},
		{"solana-key-file", "KEEPER_SOLANA_KEY_FILE", "", Node,
			"fee-payer keypair file (JSON array of 64 bytes); empty: " +
				"<data-dir>/chains/solana-devnet-payer.json (the local devnet's funded key)",
			&c.Solana.KeyFile},
		{"solana-commitment", "KEEPER_SOLANA_COMMITMENT", "finalized", Node,
			"commitment at which a Solana anchor is final: confirmed or finalized",
			&c.Solana.Commitment},
		{"solana-priority-fee", "KEEPER_SOLANA_PRIORITY_FEE", "0", Node,
			"least priority fee in micro-lamports per compute unit; with KEEPER_SOLANA_MAX_PRIORITY_FEE=0 " +
				"the fee every anchor pays (0 = none)",
			&c.Solana.PriorityFee},
		{"solana-max-priority-fee", "KEEPER_SOLANA_MAX_PRIORITY_FEE", "1000000", Node,
			"highest priority fee in micro-lamports per compute unit: anchors pay the 75th percentile of " +
				"getRecentPrioritizationFees (at least KEEPER_SOLANA_PRIORITY_FEE), 50% more than the last " +
				"when re-signed after blockhash expiry, never more than this (1,000,000 × the 20,000-unit " +
				"limit = 20,000 lamports an anchor at most); 0 = pay KEEPER_SOLANA_PRIORITY_FEE as given",
			&c.Solana.MaxPriorityFee},
		{"solana-rpc-connections", "KEEPER_SOLANA_RPC_CONNECTIONS", "4", Node,
			"concurrent status calls to the Solana endpoint",
			&c.Solana.RPCConnections},
		{"solana-rpc-rate", "KEEPER_SOLANA_RPC_RATE", "0", Node,
			"requests a second to the Solana endpoint, shared by the submitter, the status poller and the " +
				"backfill scanner; a 429 pauses them for its Retry-After; 0 = no cap",
			&c.Solana.RPCRate},
		{"dev-solana-port", "KEEPER_DEV_SOLANA_PORT", "8899", LocalChains,
			"JSON-RPC port of the local Solana devnet (`keeper dev`, `devchains`)",
			&c.Dev.SolanaPort},
		{"dev-solana-slot-ms", "KEEPER_DEV_SOLANA_SLOT_MS", "400", LocalChains,
			"slot time of the local Solana devnet (`keeper dev`, `devchains`)",
			msKnob{&c.Dev.SolanaSlotTime}},
	}
}

// backfillKnobs are the settings of wallet backfill and worker versioning.
func (c *Config) backfillKnobs() []Knob {
	return []Knob{
		{"backfill-workers", "KEEPER_BACKFILL_WORKERS", "4", Worker,
			"concurrent wallet-backfill scans per worker process (task queue `keeper-backfill`); a free " +
				"slot takes the next item at once",
			&c.Backfill.Workers},
		{"backfill-etherlink-start-block", "KEEPER_BACKFILL_ETHERLINK_START_BLOCK", "0", API,
			"first EtherLink block a wallet backfill scans",
			&c.Backfill.EtherlinkStart},
		{"backfill-solana-start-slot", "KEEPER_BACKFILL_SOLANA_START_SLOT", "0", API,
			"first Solana slot a wallet backfill scans",
			&c.Backfill.SolanaStart},
		{"backfill-evm-chunk-blocks", "KEEPER_BACKFILL_EVM_CHUNK_BLOCKS", "500", Worker,
			"EVM blocks scanned between two checkpoints",
			&c.Backfill.EVMChunkBlocks},
		{"backfill-evm-max-logs", "KEEPER_BACKFILL_EVM_MAX_LOGS", "10000", Worker,
			"an eth_getLogs answer this long is taken as truncated and its range split (etherlink presets: " +
				"5000, the public endpoint's cap)",
			&c.Backfill.EVMMaxLogs},
		{"backfill-solana-chunk", "KEEPER_BACKFILL_SOLANA_CHUNK", "100", Worker,
			"Solana signatures fetched between two checkpoints",
			&c.Backfill.SolanaChunk},
		{"backfill-retry-base-ms", "KEEPER_BACKFILL_RETRY_BASE_MS", "120000", Node,
			"a failed backfill item is retried after min(base·2^(retry−1), cap) + jitter",
			msKnob{&c.Backfill.RetryBase}},
		{"backfill-retry-cap-ms", "KEEPER_BACKFILL_RETRY_CAP_MS", "3600000", Node,
			"backfill retry delay cap",
			msKnob{&c.Backfill.RetryCap}},
		{"backfill-retry-jitter-pct", "KEEPER_BACKFILL_RETRY_JITTER_PCT", "25", Node,
			"backfill retry jitter: up to this percentage of the delay, uniform",
			&c.Backfill.RetryJitterPct},
		{"backfill-max-retries", "KEEPER_BACKFILL_MAX_RETRIES", "5", Node,
			"retries before a backfill item is ABANDONED (adding the wallet again starts it anew)",
			&c.Backfill.MaxRetries},
		{"backfill-heartbeat-ms", "KEEPER_BACKFILL_HEARTBEAT_MS", "30000", Node,
			"a scan whose worker stops heartbeating resumes from its checkpoint on another worker after " +
				"this long",
			msKnob{&c.Backfill.Heartbeat}},
		{"backfill-reconcile-ms", "KEEPER_BACKFILL_RECONCILE_MS", "60000", Worker,
			"each worker, at start and then this often, hands Temporal again any backfill item that should " +
				"be at work but has no live workflow (PENDING or RUNNING, or FAILED past its next retry; see " +
				"[Backfill](backfill.md#outages))",
			msKnob{&c.Backfill.Reconcile}},
		{"worker-versioning", "KEEPER_WORKER_VERSIONING", "false", Node,
			"workers poll as a version (deployment name + build id) of a Temporal Worker Deployment: " +
				"AnchorBatch and EpochCompute runs finish on the build they started on, WalletSync and " +
				"Backfill move to the current build; the deployment's first version becomes current by itself, " +
				"later ones when you say so (see [Rolling out a new " + "build](production.md#rolling-out-a-new-build))",
			&c.Versioning.Enabled},
		{"deployment-name", "KEEPER_DEPLOYMENT_NAME", "keeper", Node,
			"Worker Deployment that versioned workers belong to (every keeper task queue)",
			&c.Versioning.DeploymentName},
		{"build-id", "KEEPER_BUILD_ID", "", Node,
			"versioned workers' build id; empty: the binary's VCS revision (12 hex digits, `-dirty` when " +
				"built from modified sources), else its module version, else `dev`",
			&c.Versioning.BuildID},
	}
}

type msKnob struct{ d *time.Duration }

// optMsKnob is a number of milliseconds that may be left unset.
type optMsKnob struct{ d *OptionalDuration }

// Default returns the configuration with every default applied.
func Default() Config {
	var c Config
	for _, k := range c.Knobs() {
		if err := set(k.ptr, k.Default); err != nil {
			panic(fmt.Sprintf("config: bad default for %s: %v", k.Env, err))
		}
	}
	return c
}

// Load applies defaults, then the environment (via getenv, os.Getenv when nil).
func Load(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Default()
	for _, k := range c.Knobs() {
		env, v := k.Env, getenv(k.Env)
		for old, current := range deprecatedEnv {
			if current == k.Env && v == "" {
				env, v = old, getenv(old)
			}
		}
		if v != "" {
			if err := set(k.ptr, v); err != nil {
				return c, fmt.Errorf("%s=%q: %v", env, v, err)
			}
		}
	}
	return c, c.Validate()
}

// Bind registers on fs the flag of each knob that a part in uses reads
// (the deprecated names of those knobs too); parsing fs then overrides what
// Load set. Call Validate after parsing.
func (c *Config) Bind(fs *pflag.FlagSet, uses Uses) {
	for _, k := range c.Knobs() {
		if k.Uses&uses == 0 {
			continue
		}
		fs.Var(&flagValue{k.ptr}, k.Flag, flagUsage(k))
		// --help shows the knob's default, not the value bound, which is
		// the environment's and may hold a password or token.
		fs.Lookup(k.Flag).DefValue = k.Default
		for old, current := range deprecatedFlags {
			if current == k.Flag {
				fs.Var(&flagValue{k.ptr}, old, "former name of --"+current)
				_ = fs.MarkDeprecated(old, "use --"+current)
			}
		}
	}
}

// flagUsage is k's help as --help shows it. pflag takes a back-quoted word
// of a usage for the value's placeholder, so the Markdown code spans the
// configuration table shows become plain quotes here, and the placeholder
// stays the value's type.
func flagUsage(k Knob) string {
	return fmt.Sprintf("%s (env %s)", strings.ReplaceAll(k.Help, "`", "'"), k.Env)
}

// Token returns the API token from KEEPER_API_TOKEN or KEEPER_API_TOKEN_FILE.
// Errors never contain the token.
func (c *Config) Token() (string, error) {
	if c.APIToken != "" {
		return c.APIToken, nil
	}
	if c.APITokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.APITokenFile)
	if err != nil {
		return "", fmt.Errorf("KEEPER_API_TOKEN_FILE: cannot read %s", c.APITokenFile)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("KEEPER_API_TOKEN_FILE: %s is empty", c.APITokenFile)
	}
	return t, nil
}

// HasChain reports whether chain is configured.
func (c *Config) HasChain(chain string) bool {
	for _, ch := range c.Chains {
		if ch == chain {
			return true
		}
	}
	return false
}

func set(ptr any, v string) error {
	switch p := ptr.(type) {
	case *string:
		*p = v
	case *int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		*p = n
	case *int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		*p = n
	case *bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not a boolean (true or false)")
		}
		*p = b
	case *time.Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration like 10s or 1m30s")
		}
		*p = d
	case *OptionalDuration:
		if v == "" {
			*p = OptionalDuration{}
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration like 10s or 1m30s")
		}
		*p = OptionalDuration{D: d, Set: true}
	case msKnob:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("not a non-negative number of milliseconds")
		}
		*p.d = time.Duration(n) * time.Millisecond
	case optMsKnob:
		if v == "" {
			*p.d = OptionalDuration{}
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("not a non-negative number of milliseconds")
		}
		*p.d = OptionalDuration{D: time.Duration(n) * time.Millisecond, Set: true}
	case *[]string:
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*p = out
	default:
		return fmt.Errorf("config: unsupported knob type %T", ptr)
	}
	return nil
}

func get(ptr any) string {
	switch p := ptr.(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		return strconv.FormatInt(*p, 10)
	case *bool:
		return strconv.FormatBool(*p)
	case *time.Duration:
		return p.String()
	case *OptionalDuration:
		if !p.Set {
			return ""
		}
		return p.D.String()
	case msKnob:
		return strconv.FormatInt(p.d.Milliseconds(), 10)
	case optMsKnob:
		if !p.d.Set {
			return ""
		}
		return strconv.FormatInt(p.d.D.Milliseconds(), 10)
	case *[]string:
		return strings.Join(*p, ",")
	}
	return ""
}

type flagValue struct{ ptr any }

func (f *flagValue) String() string     { return get(f.ptr) }
func (f *flagValue) Set(v string) error { return set(f.ptr, v) }
func (f *flagValue) Type() string {
	switch f.ptr.(type) {
	case *int, *int64, msKnob, optMsKnob:
		return "int"
	case *time.Duration, *OptionalDuration:
		return "duration"
	case *bool:
		return "bool"
	case *[]string:
		return "list"
	}
	return "string"
}

// MarkdownTable renders the configuration table of docs/configuration.md.
func MarkdownTable() string {
	var c Config
	var b strings.Builder
	b.WriteString("| env | flag | default | what it does |\n| --- | --- | --- | --- |\n")
	for _, k := range c.Knobs() {
		fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | %s |\n", k.Env, k.Flag, k.Default, k.Help)
	}
	return b.String()
}

// WebhookConfig is the webhook delivery schedule (docs/webhooks.md).
type WebhookConfig struct {
	RetryWindow   time.Duration // attempts stop, and the delivery is failed, after this long
	RetryBase     time.Duration // first wait between attempts; doubles each time
	RetryCap      time.Duration // longest wait between attempts
	Timeout       time.Duration // one attempt's limit
	DisableAfter  time.Duration // failing this long without a success disables the webhook (0: never)
	RotationGrace time.Duration // how long a rotated-out secret keeps signing (0: not at all)
}

// MaxRotationGrace is the longest a rotated-out webhook secret may keep
// signing: an old secret is meant to bridge a redeploy, not to live on.
const MaxRotationGrace = 7 * 24 * time.Hour

// deprecatedEnv maps former names of knobs' environment variables to the
// current ones: a former name still sets the knob when the current name is
// not set.
var deprecatedEnv = map[string]string{"KEEPER_WEBHOOK_RETRY_FOR": "KEEPER_WEBHOOK_RETRY_WINDOW"}

// deprecatedFlags maps former flag names to the current ones.
var deprecatedFlags = map[string]string{"webhook-retry-for": "webhook-retry-window"}
