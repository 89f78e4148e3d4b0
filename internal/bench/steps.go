package bench

import (
	"fmt"
	"math"
	"net/http"
	"time"
)

// StepsReport is where intake requests' time went on average, in
// milliseconds: the bench sending late, keeper's handler by its
// Server-Timing steps, and what is outside both (the HTTP exchange over
// loopback, either side waiting for a core, garbage collection pauses).
// The parts add up to TotalMS.
type StepsReport struct {
	N         int     `json:"n"`
	TotalMS   float64 `json:"total_ms"`
	LateMS    float64 `json:"late_ms"`    // the bench handed it to its HTTP client after its due time
	ReadMS    float64 `json:"read_ms"`    // keeper reading and checking the request
	AdmitMS   float64 `json:"admit_ms"`   // back-pressure's count
	QueueMS   float64 `json:"queue_ms"`   // waiting for a group commit to take it
	WriterMS  float64 `json:"writer_ms"`  // waiting for the store's writer, or a batch being formed
	CommitMS  float64 `json:"commit_ms"`  // its group's inserts and commit
	HandlerMS float64 `json:"handler_ms"` // the rest of keeper's handler (the answer's body, the receipt)
	OutsideMS float64 `json:"outside_ms"` // neither the bench's lateness nor keeper's handler
}

// stepsOf averages the steps of the accepted requests whose latency is at
// least from (0: all of them); nil when none has keeper's Server-Timing.
func stepsOf(reqs []request, from time.Duration) *StepsReport {
	var sum [9]float64
	n := 0
	for _, q := range reqs {
		if q.status != http.StatusAccepted || q.steps.app == 0 || q.latency < from {
			continue
		}
		s := q.steps
		total := float64(q.latency.Microseconds())
		parts := [...]float64{float64(s.late), float64(s.read), float64(s.admit), float64(s.queue), float64(s.writer), float64(s.commit)}
		handler := float64(s.app - s.read - s.admit - s.queue - s.writer - s.commit)
		outside := total - float64(s.late) - float64(s.app)
		for i, v := range append(parts[:], handler, outside, total) {
			sum[i] += v
		}
		n++
	}
	if n == 0 {
		return nil
	}
	mean := func(i int) float64 { return math.Round(sum[i]/float64(n)) / 1000 }
	return &StepsReport{N: n, LateMS: mean(0), ReadMS: mean(1), AdmitMS: mean(2), QueueMS: mean(3), WriterMS: mean(4), CommitMS: mean(5),
		HandlerMS: mean(6), OutsideMS: mean(7), TotalMS: mean(8)}
}

// String is the steps as a sum, for the report's table.
func (s *StepsReport) String() string {
	if s == nil {
		return "– (no Server-Timing)"
	}
	return fmt.Sprintf("%.2f = late %.2f + read %.2f + admit %.2f + queue %.2f + writer %.2f + commit %.2f + handler %.2f + outside %.2f (%d)",
		s.TotalMS, s.LateMS, s.ReadMS, s.AdmitMS, s.QueueMS, s.WriterMS, s.CommitMS, s.HandlerMS, s.OutsideMS, s.N)
}
