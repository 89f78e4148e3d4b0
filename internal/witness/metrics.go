package witness

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics count a witness's answers and show the size it cosigned last
// per log. They are unregistered: the caller that serves /metrics
// registers Collectors (keeper dev's in-process witnesses, which would
// collide on one registry, do not).
type metrics struct {
	answers *prometheus.CounterVec // keeper_witness_answers_total{status}
	size    *prometheus.GaugeVec   // keeper_witness_cosigned_size{origin}
}

func newMetrics() *metrics {
	m := &metrics{
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_witness_answers_total", Help: "add-checkpoint requests answered, by HTTP status: 200 cosigned, 409 another old size, 422 not consistent with what was cosigned, 403 not signed by the log's key, 404 a log not witnessed here.",
		}, []string{"status"}),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "keeper_witness_cosigned_size", Help: "The size of the checkpoint cosigned last, by log origin.",
		}, []string{"origin"}),
	}
	for _, s := range []int{200, 409, 422} { // so rate() sees the first
		m.answers.WithLabelValues(strconv.Itoa(s))
	}
	return m
}

// Collectors are the witness's metrics, to register where /metrics is
// served.
func (w *Witness) Collectors() []prometheus.Collector {
	return []prometheus.Collector{w.metrics.answers, w.metrics.size}
}

func (m *metrics) answered(status int) { m.answers.WithLabelValues(strconv.Itoa(status)).Inc() }

func (m *metrics) cosigned(origin string, size uint64) {
	m.size.WithLabelValues(origin).Set(float64(size))
}
