package epoch_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/workflows"
)

// usageJSON is an accounting service's answer for n accounts.
func usageJSON(n int) []byte {
	r := rand.New(rand.NewPCG(7, 8))
	var b bytes.Buffer
	b.Grow(n * 48)
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		// Accounts arrive unsorted, as a real service would send them.
		fmt.Fprintf(&b, `{"account":"acct-%08x-%d","units":"%d"}`, r.Uint32(), i, r.Uint64N(1_000_000)+1)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// peakMemory samples the Go runtime's resident memory (mapped minus
// returned to the OS) until stop is called, and returns the peak.
func peakMemory() (stop func() uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(samples)
			if v := samples[0].Value.Uint64() - samples[1].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// BenchmarkEpochOfAMillionAccounts computes an epoch of 1,000,000 accounts
// end to end through the activities: fetch and seal the inputs, split the
// pool with the conservation check, write run.json and the commitment.
// Intents are measured by BenchmarkEmitIntentsToTheBuiltInLedger.
//
//	go test ./internal/epoch -run '^$' -bench EpochOfAMillion -benchtime 1x
func BenchmarkEpochOfAMillionAccounts(b *testing.B) {
	const accounts = 1_000_000
	body := usageJSON(accounts)
	f := newActivitiesFixture(b)
	f.acts.CallTimeout = time.Minute
	for i := 0; i < b.N; i++ {
		ref := f.sourceEpoch(b, fmt.Sprintf("bench-%d", i), "170141183460469231731687303715884105728", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(body)
		}))
		stop := peakMemory()
		start := time.Now()
		seal := exec[workflows.SealResult](b, f.env, f.acts.SealInputs, ref)
		sealed := time.Now()
		payouts := exec[workflows.ComputeResult](b, f.env, f.acts.ComputeRewards, ref, seal)
		computed := time.Now()
		art := exec[workflows.ArtifactsResult](b, f.env, f.acts.WriteArtifacts, ref, workflows.ArtifactsInput{Inputs: seal, Payouts: payouts})
		written := time.Now()
		peak := stop()
		require.Equal(b, accounts, payouts.Accounts)
		require.Equal(b, "170141183460469231731687303715884105728", payouts.TotalPaid)
		require.Len(b, art.Commitment, 64)
		b.ReportMetric(sealed.Sub(start).Seconds(), "seal-s")
		b.ReportMetric(computed.Sub(sealed).Seconds(), "compute-s")
		b.ReportMetric(written.Sub(computed).Seconds(), "artifacts-s")
		b.ReportMetric(written.Sub(start).Seconds(), "total-s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	}
}

// BenchmarkEmitIntentsToTheBuiltInLedger sends an epoch's intents to the
// built-in ledger (in-process HTTP handler over the SQLite store).
//
//	go test ./internal/epoch -run '^$' -bench EmitIntents -benchtime 1x
func BenchmarkEmitIntentsToTheBuiltInLedger(b *testing.B) {
	for _, accounts := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(accounts), func(b *testing.B) {
			body := usageJSON(accounts)
			f := newActivitiesFixture(b)
			f.acts.CallTimeout = time.Minute
			for i := 0; i < b.N; i++ {
				ref := f.sourceEpoch(b, fmt.Sprintf("intents-%d", i), "1000000000000000000000", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Write(body)
				}))
				seal := exec[workflows.SealResult](b, f.env, f.acts.SealInputs, ref)
				payouts := exec[workflows.ComputeResult](b, f.env, f.acts.ComputeRewards, ref, seal)
				start := time.Now()
				sent := exec[workflows.IntentsResult](b, f.env, f.acts.EmitIntents, ref, payouts)
				elapsed := time.Since(start)
				require.Equal(b, payouts.Intents, sent.Acknowledged)
				b.ReportMetric(elapsed.Seconds(), "intents-s")
				b.ReportMetric(float64(sent.Acknowledged)/elapsed.Seconds(), "intents/s")
			}
		})
	}
}
