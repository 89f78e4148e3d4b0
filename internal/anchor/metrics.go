package anchor

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count what the anchoring activities saw, in the worker
// process that ran them: attempts and retries (which show on /metrics while
// Temporal runs them; the workflow history shows each activity's last
// attempt only when it ends), transactions and their outcomes, batches,
// latency to finality and dead letters. Every method is safe on a nil
// *Metrics (counts nothing). Register Collectors() where /metrics is
// served.
type Metrics struct {
	Attempts      *prometheus.CounterVec   // keeper_anchor_attempts_total{chain,activity}
	Retries       *prometheus.CounterVec   // keeper_anchor_retries_total{chain,activity}
	Dropped       *prometheus.CounterVec   // keeper_anchor_dropped_total{chain}
	Batches       *prometheus.CounterVec   // keeper_anchor_batches_total{chain,outcome}
	Transactions  *prometheus.CounterVec   // keeper_anchor_transactions_total{chain,outcome}
	BatchSize     *prometheus.HistogramVec // keeper_anchor_batch_size{chain}
	SubmitToFinal *prometheus.HistogramVec // keeper_anchor_submit_to_final_seconds{chain}
	DeadLetters   *prometheus.CounterVec   // keeper_dead_letters_total{chain}
	Waits         *prometheus.GaugeVec     // keeper_anchor_finality_waits{chain}
	Orphans       *prometheus.CounterVec   // keeper_anchor_orphaned_confirms_total{chain}

	// OnConfirmed, when set, is told the chain of each batch confirmed
	// here (the worker reads its signer's balance after it). Set it before
	// the worker starts.
	OnConfirmed func(chain string)
}

// Batch and transaction outcomes (the outcome label). A dropped transaction
// is keeper_anchor_dropped_total.
const (
	OutcomeConfirmed  = "confirmed"   // batch: receipts recorded
	OutcomeDeadLetter = "dead_letter" // batch: its evidence dead-lettered
	OutcomeSubmitted  = "submitted"   // transaction: broadcast (a rebroadcast of the same one counts again)
	OutcomeFinal      = "final"       // transaction: final on its chain
	OutcomeFailed     = "failed"      // transaction: included but failed
)

// NewMetrics returns unregistered metrics; the series of the given
// chains start at 0.
func NewMetrics(chainNames ...string) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_attempts_total", Help: "Attempts of the anchoring activities (SubmitAnchor, ConfirmAnchor, RecordReceipts), first ones and retries, by chain and activity.",
		}, []string{"chain", "activity"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_retries_total", Help: "Attempts of the anchoring activities that retry a failed or timed-out attempt (Temporal attempt > 1), by chain and activity.",
		}, []string{"chain", "activity"}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_dropped_total", Help: "Anchor transactions the chain will not include as sent (evicted, reorganised out, blockhash expired), each followed by a new SubmitAnchor, by chain.",
		}, []string{"chain"}),
		Batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_batches_total", Help: "Anchor batches finished by this worker, by chain and outcome (confirmed, dead_letter).",
		}, []string{"chain", "outcome"}),
		Transactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_transactions_total", Help: "Anchor transactions by chain and outcome: submitted (each broadcast), final, failed.",
		}, []string{"chain", "outcome"}),
		BatchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "keeper_anchor_batch_size", Help: "Evidence per anchor batch when its workflow is started, by chain.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13), // 1 … 4096
		}, []string{"chain"}),
		SubmitToFinal: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "keeper_anchor_submit_to_final_seconds", Help: "Time from a batch's first broadcast to its transaction being final, by chain.",
			Buckets: []float64{.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"chain"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_dead_letters_total", Help: "Evidence dead-lettered (its batch failed permanently or used up its attempts), by chain.",
		}, []string{"chain"}),
		Waits: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "keeper_anchor_finality_waits", Help: "Batches whose transaction this worker's finality watcher follows until it is final (each holds no activity slot), by chain.",
		}, []string{"chain"}),
		Orphans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_orphaned_confirms_total", Help: "ConfirmAnchor attempts found started without a recorded wait (their worker died in between) and taken up by this worker's watcher, by chain.",
		}, []string{"chain"}),
	}
	for _, c := range chainNames {
		for _, o := range []string{OutcomeConfirmed, OutcomeDeadLetter} {
			m.Batches.WithLabelValues(c, o)
		}
		for _, o := range []string{OutcomeSubmitted, OutcomeFinal, OutcomeFailed} {
			m.Transactions.WithLabelValues(c, o)
		}
		// The anchoring activities' series start at 0 too, so rate() sees
		// the first retry and dashboards find every series (deploy/grafana).
		for _, act := range []string{"SubmitAnchor", "ConfirmAnchor", "RecordReceipts"} {
			m.Attempts.WithLabelValues(c, act)
			m.Retries.WithLabelValues(c, act)
		}
		m.Dropped.WithLabelValues(c)
		m.DeadLetters.WithLabelValues(c)
		m.Waits.WithLabelValues(c)
		m.Orphans.WithLabelValues(c)
	}
	return m
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Attempts, m.Retries, m.Dropped, m.Batches, m.Transactions, m.BatchSize, m.SubmitToFinal, m.DeadLetters, m.Waits, m.Orphans}
}

// attempt counts one activity attempt.
func (m *Metrics) attempt(chain, activity string, attempt int32) {
	if m == nil {
		return
	}
	m.Attempts.WithLabelValues(chain, activity).Inc()
	if attempt > 1 {
		m.Retries.WithLabelValues(chain, activity).Inc()
	}
}

// dropped counts one dropped transaction.
func (m *Metrics) dropped(chain string) {
	if m != nil {
		m.Dropped.WithLabelValues(chain).Inc()
	}
}

// BatchStarted observes the size of a batch whose workflow was started.
func (m *Metrics) BatchStarted(chain string, size int) {
	if m != nil {
		m.BatchSize.WithLabelValues(chain).Observe(float64(size))
	}
}

func (m *Metrics) batch(chain, outcome string) {
	if m == nil {
		return
	}
	m.Batches.WithLabelValues(chain, outcome).Inc()
	if outcome == OutcomeConfirmed && m.OnConfirmed != nil {
		m.OnConfirmed(chain)
	}
}

func (m *Metrics) transaction(chain, outcome string) {
	if m != nil {
		m.Transactions.WithLabelValues(chain, outcome).Inc()
	}
}

func (m *Metrics) final(chain string, sinceSubmit time.Duration) {
	if m != nil {
		m.Transactions.WithLabelValues(chain, OutcomeFinal).Inc()
		m.SubmitToFinal.WithLabelValues(chain).Observe(sinceSubmit.Seconds())
	}
}

func (m *Metrics) deadLetter(chain string, evidence int) {
	if m != nil {
		m.Batches.WithLabelValues(chain, OutcomeDeadLetter).Inc()
		m.DeadLetters.WithLabelValues(chain).Add(float64(evidence))
	}
}

func (m *Metrics) waits(chain string, delta float64) {
	if m != nil {
		m.Waits.WithLabelValues(chain).Add(delta)
	}
}

func (m *Metrics) orphan(chain string) {
	if m != nil {
		m.Orphans.WithLabelValues(chain).Inc()
	}
}
