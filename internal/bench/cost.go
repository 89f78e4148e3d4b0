package bench

import (
	"math"
	"os"
)

// ServerCost is what the PostgreSQL server (every postgres process of this
// machine) used over a phase.
type ServerCost struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPer1000 float64 `json:"cpu_seconds_per_1000_evidence"`
}

// ProcessCost is what one process of a multi-process deployment used over
// a phase.
type ProcessCost struct {
	Name       string  `json:"name"` // devchains, devserver, api-1, …, worker-2, or bench (the load generator and the analysis)
	PID        int     `json:"pid"`
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPer1000 float64 `json:"cpu_seconds_per_1000_evidence"`
	PeakRSSMiB float64 `json:"peak_rss_mib"` // over the phase
}

// cpuUse is the CPU time a stack's parts have used so far, in seconds.
type cpuUse struct {
	self     float64   // this process: a whole single-process stack, or the multi-process bench's load generator
	procs    []float64 // the multi-process stack's processes, as st.procs
	postgres float64
	// The peak RSS since resetPeaks, MiB, of this process and of each of
	// st.procs: read here, when the phase's evidence has settled, so that
	// the bench's analysis of the phase afterwards (a record per evidence,
	// in this process) is not counted as keeper's peak.
	peak      float64
	procPeaks []float64
}

func (st *stack) cpuUse() cpuUse {
	var u cpuUse
	u.self, _ = cpuSeconds()
	_, u.peak, _ = memory()
	for _, c := range st.procs {
		t, _ := readStat(c.pid())
		u.procs = append(u.procs, t.cpu())
		m, _ := memoryDetail(c.pid())
		u.procPeaks = append(u.procPeaks, m.peak)
	}
	if st.postgres {
		u.postgres, _ = postgresCPU()
	}
	return u
}

// resetPeaks starts a new peak-RSS window in every process of the stack.
func (st *stack) resetPeaks() {
	resetPeakRSS("self")
	for _, c := range st.procs {
		resetPeakRSS(c.pid())
	}
}

// costs fills the phase's CPU and memory columns from the CPU used between
// u0 and u1 and the peaks since resetPeaks: keeper's CPU is every keeper
// process's (the bench's own load generator included, as in a single
// process), its peak RSS the process's or, with several, the sum of their
// peaks.
func (st *stack) costs(rep *AnchorReport, u0, u1 cpuUse) {
	per1000 := func(s float64) float64 {
		if rep.Confirmed == 0 {
			return 0
		}
		return round2(s / float64(rep.Confirmed) * 1000)
	}
	keeper := u1.self - u0.self
	peak := u1.peak
	if len(st.procs) > 0 {
		peak = 0
		for i, c := range st.procs {
			cpu := u1.procs[i] - u0.procs[i]
			keeper += cpu
			peak += u1.procPeaks[i]
			rep.Processes = append(rep.Processes, ProcessCost{Name: c.name, PID: c.cmd.Process.Pid, CPUSeconds: round2(cpu), CPUPer1000: per1000(cpu), PeakRSSMiB: round2(u1.procPeaks[i])})
		}
		rep.Processes = append(rep.Processes, ProcessCost{Name: "bench", PID: os.Getpid(), CPUSeconds: round2(u1.self - u0.self), CPUPer1000: per1000(u1.self - u0.self), PeakRSSMiB: round2(u1.peak)})
	}
	rep.CPUSeconds, rep.CPUPer1000, rep.PeakRSSMiB = round2(keeper), per1000(keeper), round2(peak)
	if st.postgres {
		pg := u1.postgres - u0.postgres
		rep.Postgres = &ServerCost{CPUSeconds: round2(pg), CPUPer1000: per1000(pg)}
	}
}

// storeGrowth fills the phase's bytes per evidence: what keeper's store
// grew by over the phase, divided by the evidence stored in it (and by its
// chains).
func storeGrowth(rep *AnchorReport, before, after int64, evidence, chains int) {
	rep.StoreBytes, rep.StoredEvidence = after-before, evidence
	if evidence > 0 && chains > 0 {
		rep.BytesPerEvidence = math.Round(float64(rep.StoreBytes) / float64(evidence))
		rep.BytesPerEvidenceChain = math.Round(float64(rep.StoreBytes) / float64(evidence*chains))
		if rep.Log != nil {
			// The log's tables are in the store: their growth is part of StoreBytes.
			rep.LogBytesPerEvidenceChain = math.Round(float64(rep.Log.Bytes) / float64(evidence*chains))
		}
	}
}
