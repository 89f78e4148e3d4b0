// Package config is the one home of every keeper knob: a struct with
// defaults, the environment variable that sets each field and the flag that
// overrides it. Precedence: flag > environment > preset (an EtherLink
// network's or a public Solana cluster's, `keeper dev`'s quick cadence) >
// default. Each feature's knobs live in that feature's file (anchor.go,
// backfill.go, epoch.go, webhook.go, log.go, the chains' and the server's);
// this file holds the machinery that reads them, and source.go records
// where each value came from (`keeper config` prints it).
package config

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
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

	// sources records, by environment variable, where each setting that is
	// not at its default got its value (source.go).
	sources map[string]Source
	// deprecations are the lines Load has to say about former names.
	deprecations []string
}

// OptionalDuration is a duration setting that may be left unset.
type OptionalDuration struct {
	D   time.Duration
	Set bool
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
	Base           Uses = 1 << iota // every command that reads the configuration: the data directory, logging
	Store                           // what opens keeper's store (the node, `keeper log export`, `log trust`)
	API                             // `keeper api`: the HTTP API, intake and the dispatchers
	Worker                          // `keeper worker`: the Temporal workers, the log's sequencer
	LogSigner                       // what signs the evidence log (the worker, `keeper log keygen`, `log trust retire`)
	LogMirror                       // `keeper log export --follow`
	DevServer                       // the embedded Temporal server (`keeper dev`, `devserver`)
	LocalChains                     // the local chains (`keeper dev`, `devchains`)
	Profiling                       // Go's profiles, served by `keeper dev` and `keeper bench`
	LocalWitnesses                  // the log's witnesses `keeper dev` starts in process

	// Node is what `keeper api` and `keeper worker` both read.
	Node = API | Worker
	// Everything is the whole stack `keeper dev` and `keeper bench` run.
	Everything = Base | Store | Node | LogSigner | LogMirror | DevServer | LocalChains | Profiling | LocalWitnesses
)

// Knobs lists every setting of c, in the order of docs/configuration.md:
// each feature's, from the file that holds that feature.
func (c *Config) Knobs() []Knob {
	return slices.Concat(c.serverKnobs(), c.chainKnobs(), c.pollKnobs(), c.anchorKnobs(), c.retryKnobs(), c.logKnobs(),
		c.webhookKnobs(), c.intakeKnobs(), c.retentionKnobs(), c.epochKnobs(), c.httpKnobs(), c.accessKnobs(),
		c.devServerKnobs(), c.evmKnobs(), c.solanaKnobs(), c.devChainKnobs(), c.backfillKnobs(), c.versioningKnobs())
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

// Load applies defaults, then the environment (via getenv, os.Getenv when
// nil): each setting's variable, else a former name of it (which adds a
// line to Deprecations). It records which settings getenv gave, so the
// presets applied later leave them be and `keeper config` can say so.
func Load(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Default()
	for _, k := range c.Knobs() {
		name, v := c.lookupEnv(k.Env, getenv)
		if v == "" {
			continue
		}
		if err := set(k.ptr, v); err != nil {
			return c, fmt.Errorf("%s=%q: %v", name, v, err)
		}
		c.record(k.Env, Source{Origin: FromEnv, Name: name, Current: current(name, k.Env)})
	}
	return c, c.Validate()
}

// Bind registers on fs the flag of each knob that a part in uses reads
// (the former names of those knobs too, marked deprecated: pflag prints
// the deprecation line when one is used); parsing fs then overrides what
// Load set, and records the flag as the setting's source. Call Validate
// after parsing.
func (c *Config) Bind(fs *pflag.FlagSet, uses Uses) {
	for _, k := range c.Knobs() {
		if k.Uses&uses == 0 {
			continue
		}
		fs.Var(&flagValue{c: c, k: k, name: k.Flag}, k.Flag, flagUsage(k))
		// --help shows the knob's default, not the value bound, which is
		// the environment's and may hold a password or token.
		fs.Lookup(k.Flag).DefValue = k.Default
		for _, f := range formerNamesOf(k.Env) {
			fs.Var(&flagValue{c: c, k: k, name: f.flag}, f.flag, "former name of --"+k.Flag)
			_ = fs.MarkDeprecated(f.flag, "use --"+k.Flag)
		}
	}
}

// flagUsage is k's help as --help shows it. pflag takes a back-quoted word
// of a usage for the value's placeholder, so the Markdown code spans the
// configuration table shows become plain quotes here, and the placeholder
// stays the value's type.
func flagUsage(k Knob) string {
	return fmt.Sprintf("%s (env %s)", strings.ReplaceAll(describe(k), "`", "'"), k.Env)
}

// describe is k's help with its former names, if any.
func describe(k Knob) string {
	h := k.Help
	for _, f := range formerNamesOf(k.Env) {
		h += fmt.Sprintf("; its former name `%s` (`--%s`) still works, deprecated", f.env, f.flag)
	}
	return h
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
		return setOptional(p, v, func(v string) (time.Duration, error) {
			d, err := time.ParseDuration(v)
			if err != nil {
				return 0, fmt.Errorf("not a duration like 10s or 1m30s")
			}
			return d, nil
		})
	case msKnob:
		d, err := parseMs(v)
		if err != nil {
			return err
		}
		*p.d = d
	case optMsKnob:
		return setOptional(p.d, v, parseMs)
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

// setOptional sets p from v read by parse; "" leaves it unset.
func setOptional(p *OptionalDuration, v string, parse func(string) (time.Duration, error)) error {
	if v == "" {
		*p = OptionalDuration{}
		return nil
	}
	d, err := parse(v)
	if err != nil {
		return err
	}
	*p = OptionalDuration{D: d, Set: true}
	return nil
}

// parseMs reads a non-negative number of milliseconds.
func parseMs(v string) (time.Duration, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a non-negative number of milliseconds")
	}
	return time.Duration(n) * time.Millisecond, nil
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

// flagValue is the pflag.Value of knob k under the flag name (k's own or a
// former name of it): setting it records the flag as k's source.
type flagValue struct {
	c    *Config
	k    Knob
	name string
}

func (f *flagValue) String() string { return get(f.k.ptr) }

func (f *flagValue) Set(v string) error {
	if err := set(f.k.ptr, v); err != nil {
		return err
	}
	f.c.record(f.k.Env, Source{Origin: FromFlag, Name: f.name, Current: current(f.name, f.k.Flag)})
	return nil
}

func (f *flagValue) Type() string {
	switch f.k.ptr.(type) {
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

// MarkdownTable renders the configuration table of docs/configuration.md
// (`keeper config --markdown` prints it).
func MarkdownTable() string {
	var c Config
	var b strings.Builder
	b.WriteString("| env | flag | default | what it does |\n| --- | --- | --- | --- |\n")
	for _, k := range c.Knobs() {
		fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | %s |\n", k.Env, k.Flag, k.Default, describe(k))
	}
	return b.String()
}
