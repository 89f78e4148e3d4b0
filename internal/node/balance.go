package node

import (
	"context"
	"log/slog"
	"math"
	"math/big"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/chains"
)

// balanceEvery is how often the worker looks whether a chain anchored since
// its signer's balance was last read, and reads it again if so.
const balanceEvery = time.Minute

// balanceStartTimeout bounds the balance read a worker makes as it starts:
// a chain that does not answer delays the start by this much at most, and
// its balance is read again after its next confirmed batch.
const balanceStartTimeout = 3 * time.Second

var (
	signerBalanceDesc = prometheus.NewDesc("keeper_chain_signer_balance",
		"Balance of the account that pays the chain's anchors (EtherLink signer, Solana fee payer) in the chain's smallest unit (wei, lamports), read by the worker at start and within a minute after a batch is confirmed; a float, so exact to 53 bits.",
		[]string{"chain"}, nil)
	signerRunwayDesc = prometheus.NewDesc("keeper_chain_signer_runway_days",
		"Days until the signer's balance is spent at the rate of the last hour (balance ÷ (last hour's spend × 24)); +Inf when nothing was spent in the last hour.",
		[]string{"chain"}, nil)
)

// signerBalances follows the balances of the chains' paying accounts
// (chains.Funded) and exports them with their runway. It costs no request
// while keeper is idle (docs/chains.md, Polling budget): a balance is read once at
// start and then only when a batch was confirmed on its chain since the last
// read, at most once per balanceEvery.
type signerBalances struct {
	log    *slog.Logger
	now    func() time.Time
	chains []*signerBalance // by name
}

type signerBalance struct {
	name     string
	funded   chains.Funded
	anchored atomic.Bool // a batch was confirmed since the last read

	mu      sync.Mutex
	samples []balanceSample // oldest first: the last hour, and the one read before it
}

type balanceSample struct {
	at      time.Time
	balance *big.Int
}

// newSignerBalances follows the adapters that are chains.Funded.
func newSignerBalances(adapters map[string]chains.Adapter, log *slog.Logger) *signerBalances {
	b := &signerBalances{log: log, now: time.Now}
	for name, a := range adapters {
		if f, ok := a.(chains.Funded); ok {
			b.chains = append(b.chains, &signerBalance{name: name, funded: f})
		}
	}
	sort.Slice(b.chains, func(i, j int) bool { return b.chains[i].name < b.chains[j].name })
	return b
}

// Confirmed notes that a batch was confirmed on chain: its signer's balance
// is read at the next tick.
func (b *signerBalances) Confirmed(chain string) {
	for _, c := range b.chains {
		if c.name == chain {
			c.anchored.Store(true)
		}
	}
}

// readAll reads every chain's balance now, in parallel, each within timeout.
func (b *signerBalances) readAll(ctx context.Context, timeout time.Duration) {
	var wg sync.WaitGroup
	for _, c := range b.chains {
		wg.Go(func() { b.read(ctx, c, timeout) })
	}
	wg.Wait()
}

// readAnchored reads the balances of the chains that anchored since their
// last read.
func (b *signerBalances) readAnchored(ctx context.Context, timeout time.Duration) {
	for _, c := range b.chains {
		if c.anchored.Swap(false) {
			b.read(ctx, c, timeout)
		}
	}
}

func (b *signerBalances) read(ctx context.Context, c *signerBalance, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bal, err := c.funded.Balance(ctx)
	if err != nil {
		// Read again after the next batch, not sooner: an idle keeper
		// sends nothing.
		c.anchored.Store(true)
		b.log.Warn("signer balance not read", "chain", c.name, "error", err)
		return
	}
	c.observe(b.now(), bal)
}

// run reads the balances that anchoring changed, every interval, until ctx ends.
func (b *signerBalances) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.readAnchored(ctx, every)
		}
	}
}

// observe adds a sample and forgets those the last hour's spend no longer needs.
func (c *signerBalance) observe(at time.Time, bal *big.Int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples = append(c.samples, balanceSample{at, bal})
	c.samples = trimSamples(c.samples, at.Add(-time.Hour))
}

// trimSamples keeps the samples at or after since, and the last one before it
// (the balance the window starts from).
func trimSamples(s []balanceSample, since time.Time) []balanceSample {
	i := sort.Search(len(s), func(i int) bool { return !s[i].at.Before(since) })
	if i > 1 {
		s = append(s[:0], s[i-1:]...)
	}
	return s
}

// hourlySpend is what the account spent in the hour before now: the sum of
// the balance's falls from one sample to the next where the later sample is
// within that hour. A rise is a top-up, which spends nothing.
func hourlySpend(s []balanceSample, now time.Time) *big.Int {
	spent := new(big.Int)
	since := now.Add(-time.Hour)
	for i := 1; i < len(s); i++ {
		if s[i].at.Before(since) {
			continue
		}
		if d := new(big.Int).Sub(s[i-1].balance, s[i].balance); d.Sign() > 0 {
			spent.Add(spent, d)
		}
	}
	return spent
}

// runwayDays is how many days balance lasts at hourly spend a day
// (balance ÷ (hourly × 24)); +Inf when nothing is spent.
func runwayDays(balance, hourly *big.Int) float64 {
	if hourly.Sign() <= 0 {
		return math.Inf(1)
	}
	if balance.Sign() <= 0 {
		return 0
	}
	days := new(big.Float).Quo(new(big.Float).SetInt(balance), new(big.Float).SetInt(new(big.Int).Mul(hourly, big.NewInt(24))))
	f, _ := days.Float64()
	return f
}

// Describe implements prometheus.Collector.
func (b *signerBalances) Describe(ch chan<- *prometheus.Desc) {
	ch <- signerBalanceDesc
	ch <- signerRunwayDesc
}

// Collect implements prometheus.Collector: a chain's series appear once its
// balance was read.
func (b *signerBalances) Collect(ch chan<- prometheus.Metric) {
	now := b.now()
	for _, c := range b.chains {
		c.mu.Lock()
		if len(c.samples) == 0 {
			c.mu.Unlock()
			continue
		}
		bal := c.samples[len(c.samples)-1].balance
		spent := hourlySpend(c.samples, now)
		c.mu.Unlock()
		f, _ := new(big.Float).SetInt(bal).Float64()
		ch <- prometheus.MustNewConstMetric(signerBalanceDesc, prometheus.GaugeValue, f, c.name)
		ch <- prometheus.MustNewConstMetric(signerRunwayDesc, prometheus.GaugeValue, runwayDays(bal, spent), c.name)
	}
}
