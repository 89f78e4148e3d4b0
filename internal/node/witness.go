package node

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/logsvc"
)

// startWitnessing lists the configured witnesses and quorum in the trust
// root and starts submitting the log's checkpoints to them (docs/log.md,
// Witnesses). A witness that is down delays receipts, nothing else.
func (n *Node) startWitnessing(ctx context.Context, signer *evlog.Signer, seq *logsvc.Sequencer) error {
	ws, quorum, err := n.Cfg.LogWitnesses()
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		n.warnUnwitnessed(ctx)
		return nil
	}
	keys := make([]evlog.WitnessKey, len(ws))
	witnesses := make([]logsvc.Witness, len(ws))
	for i, w := range ws {
		keys[i] = w.Key
		witnesses[i] = logsvc.Witness{Key: w.Key, URL: w.URL}
	}
	t, err := logsvc.ListWitnesses(ctx, n.Store, signer, keys, quorum, time.Now())
	if err != nil {
		return err
	}
	n.Logger.Info("trust root: the log's witnesses are listed", "version", t.Version, "witnesses", len(t.Root.Witnesses.List), "quorum", quorum)
	wg := &logsvc.Witnessing{
		Store: n.Store, LogKey: signer.Key(), Witnesses: witnesses, Quorum: quorum,
		Interval: n.Cfg.Log.CheckpointInterval, Wake: seq.Signed,
		Client: &http.Client{Timeout: 10 * time.Second}, Logger: n.Logger.With("component", "witnesses"),
		Observe: n.witnessMetrics.observe,
	}
	n.witnessing.Store(wg)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		wg.Run(ctx)
	}()
	return nil
}

// warnUnwitnessed says, at start, when the trust root asks for witnesses'
// cosignatures and none is configured: receipts of the checkpoints that
// need them would wait for ever.
func (n *Node) warnUnwitnessed(ctx context.Context) {
	t, err := n.Store.TrustRoot(ctx)
	if err != nil {
		return
	}
	if q := t.Root.Witnesses.Quorum; len(q) > 0 && q[len(q)-1].Witnesses > 0 {
		last := q[len(q)-1]
		n.Logger.Warn("the trust root asks for witnesses' cosignatures and KEEPER_LOG_WITNESSES lists none: receipts of checkpoints that need them wait until the witnesses are configured again",
			"quorum", last.Witnesses, "from_size", last.From, "witnesses", len(t.Root.Witnesses.List))
	}
}

// witnessReadyDetail is /readyz's "witnesses" member: whether receipts wait
// for the quorum, how far the witnessed checkpoint trails, and (where this
// process submits) each witness's state. It informs; it never fails
// readiness, as a witness outage stops nothing but receipts.
func (n *Node) witnessReadyDetail(ctx context.Context) map[string]any {
	ws, quorum, err := n.Cfg.LogWitnesses()
	if err != nil || len(ws) == 0 {
		return nil
	}
	d := map[string]any{"quorum": quorum, "listed": len(ws)}
	var lag logsvc.WitnessLag
	if wg := n.witnessing.Load(); wg != nil {
		lag = wg.Lag()
		d["status"] = wg.Status()
	} else {
		probe := &logsvc.Witnessing{Store: n.Store}
		probe.RefreshLag(ctx)
		lag = probe.Lag()
	}
	d["latest_size"], d["witnessed_size"] = lag.Latest, lag.Witnessed
	d["lag_entries"], d["lag_seconds"] = lag.Entries, lag.Seconds
	d["receipts"] = "named by the newest witnessed checkpoint"
	if lag.Entries > 0 {
		d["receipts"] = "evidence anchored in checkpoints after the newest witnessed one wait for the witnesses' quorum"
	}
	return map[string]any{"witnesses": d}
}

// witnessFeature adds the witnesses' state to the API's /readyz.
type witnessFeature struct{ n *Node }

func (witnessFeature) Routes(*httpapi.Routes) {}

func (f witnessFeature) ReadyDetail(ctx context.Context) map[string]any {
	return f.n.witnessReadyDetail(ctx)
}

// witnessMetrics are the log's witnesses' metrics: their submissions, the
// time from a checkpoint's signature to its quorum, and the lag.
type witnessMetrics struct {
	submissions *prometheus.CounterVec
	quorum      prometheus.Histogram
}

func newWitnessMetrics() *witnessMetrics {
	return &witnessMetrics{
		submissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_log_witness_submissions_total",
			Help: "Checkpoints submitted to each witness, by outcome: cosigned, conflict (it held another size: proved again from there), or why it failed (docs/log.md, Witnesses).",
		}, []string{"witness", "outcome"}),
		quorum: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "keeper_log_witness_quorum_seconds",
			Help:    "Time from a checkpoint's signature to the witnesses' quorum cosigning it.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
	}
}

func (m *witnessMetrics) observe(witness, outcome string, quorumAfter time.Duration) {
	m.submissions.WithLabelValues(witness, outcome).Inc()
	if quorumAfter > 0 {
		m.quorum.Observe(quorumAfter.Seconds())
	}
}

// collectors are the metrics and the lag gauges, which read the lag the
// node's witnessing last measured (0 without witnesses).
func (m *witnessMetrics) collectors(n *Node) []prometheus.Collector {
	lag := func() logsvc.WitnessLag {
		if wg := n.witnessing.Load(); wg != nil {
			return wg.Lag()
		}
		return logsvc.WitnessLag{}
	}
	return []prometheus.Collector{m.submissions, m.quorum,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "keeper_log_witness_lag_entries",
			Help: "Entries the newest checkpoint holds beyond the newest one the witnesses' quorum cosigned: evidence whose receipts wait.",
		}, func() float64 { return float64(lag().Entries) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "keeper_log_witness_lag_seconds",
			Help: "Seconds between the newest checkpoint's signature and the newest witnessed checkpoint's.",
		}, func() float64 { return lag().Seconds }),
	}
}
