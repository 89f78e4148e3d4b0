package bench

import (
	"fmt"
	"time"
)

// How an anchoring phase's steady window is cut (steadyRate): its
// confirmed/s leaves out SteadyWarmUp after the phase's first confirmation
// (the pipeline filling: batches growing to their size, the store's and
// Temporal's caches, the Go heap) and counts over the next SteadyWindow or
// more, so a phase's --duration must be at least their sum.
const (
	SteadyWarmUp = 10 * time.Second
	SteadyWindow = 20 * time.Second
)

// CadenceLeast is the least a cadence rate's arrival lasts for its figures
// to mean what they say: they are per minute of arrivals, and the batch that
// goes at once and the one that carries what came last weigh less the more
// anchor intervals the arrival spans.
const CadenceLeast = time.Minute

// ShortPhase is a phase asked to run for less than its steady window needs:
// its figures are reported, but they are not steady state.
type ShortPhase struct {
	Phase  string  `json:"phase"`
	Flag   string  `json:"flag"`    // the option that sets its length
	GivenS float64 `json:"given_s"` // what the run gave it
	LeastS float64 `json:"least_s"` // the least that gives a steady window
	Why    string  `json:"why"`
}

// String is the warning a person reads.
func (s ShortPhase) String() string {
	return fmt.Sprintf("%s phase: %s %v is too short for a steady window; use at least %v (%s)",
		s.Phase, s.Flag, seconds(s.GivenS), seconds(s.LeastS), s.Why)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// anchoringLeast is the least load an anchoring phase needs for its steady
// window: the warm-up and the window itself.
func anchoringLeast() time.Duration { return SteadyWarmUp + SteadyWindow }

// steadyLoad tells whether an anchoring phase's load was long enough for
// its confirmed/s to be the steady rate.
func steadyLoad(load time.Duration) bool { return load >= anchoringLeast() }

// cadenceLeast is the least a cadence rate needs with these anchor
// intervals: CadenceLeast, and two of the longest interval.
func cadenceLeast(longestInterval time.Duration) time.Duration {
	return max(CadenceLeast, 2*longestInterval)
}

// shortPhases lists the phases of o too short for their steady window, in
// run order. The intake, low-load and tiles phases have no warm-up to leave
// out (a user's first request counts as much as the last), so no least.
func (o *Options) shortPhases() []ShortPhase {
	var out []ShortPhase
	if o.has(PhaseCadence) {
		var longest time.Duration
		for _, c := range o.Config.Chains {
			longest = max(longest, o.Config.AnchorIntervalFor(c))
		}
		if least := cadenceLeast(longest); o.CadenceFor < least {
			out = append(out, ShortPhase{Phase: PhaseCadence, Flag: "--cadence-for", GivenS: o.CadenceFor.Seconds(), LeastS: least.Seconds(),
				Why: fmt.Sprintf("its figures are per minute of arrivals, over at least two of the longest anchor interval, %v", longest)})
		}
	}
	for _, p := range AllPhases {
		if (p != PhaseBatched && p != PhaseBulk && p != PhasePerEvidence) || !o.has(p) || steadyLoad(o.Duration) {
			continue
		}
		out = append(out, ShortPhase{Phase: p, Flag: "--duration", GivenS: o.Duration.Seconds(), LeastS: anchoringLeast().Seconds(),
			Why: fmt.Sprintf("confirmed/s leaves out %v of warm-up after the first confirmation and counts over the next %v", SteadyWarmUp, SteadyWindow)})
	}
	return out
}
