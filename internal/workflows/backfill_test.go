package workflows_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/workflows"
)

// WalletSuite runs WalletSync and Backfill with the real activities over a
// real store, scanning the local EVM chain and the local Solana devnet; the
// test environment's clock skips the retry waits.
type WalletSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	store  *store.Store
	chain  *devchain.Chain
	devnet *devnet.Devnet
	acts   *backfill.Activities
	env    *testsuite.TestWorkflowEnvironment
	scans  []time.Time // ScanNetwork starts, on the workflow clock
}

func TestWalletBackfill(t *testing.T) { suite.Run(t, new(WalletSuite)) }

var testPolicy = workflows.BackfillPolicy{Schedule: workflows.DefaultRetrySchedule, ScanTimeout: time.Hour, Heartbeat: time.Minute}

func (s *WalletSuite) SetupTest() {
	ctx := context.Background()
	st := storetest.SQLite(s.T())
	chain, err := devchain.Start(ctx, devchain.Options{Dir: s.T().TempDir(), BlockTime: time.Hour, FinalityDepth: 4})
	s.Require().NoError(err)
	s.T().Cleanup(func() { chain.Stop() })
	dn, err := devnet.Start(s.T().Context(), devnet.Options{SlotTime: 10 * time.Millisecond})
	s.Require().NoError(err)
	s.T().Cleanup(dn.Stop)
	evm, err := evmscan.New(ctx, evmscan.Config{Network: scan.Etherlink, RPCURL: chain.URL(), ChunkBlocks: 20})
	s.Require().NoError(err)
	s.store, s.chain, s.devnet = st, chain, dn
	s.acts = &backfill.Activities{Store: st, Scanners: map[string]scan.Scanner{
		scan.Etherlink: evm,
		scan.Solana:    solscan.New(solscan.Config{Network: scan.Solana, RPCURL: dn.URL(), ChunkSize: 10}),
	}}
	s.newEnv()
}

func (s *WalletSuite) newEnv() {
	s.scans = nil
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflow(workflows.Backfill)
	backfill.RegisterActivities(s.env, s.acts)
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "ScanNetwork" {
			s.scans = append(s.scans, s.env.Now())
		}
	})
}

func (s *WalletSuite) add(wallet string, network string) {
	_, _, err := s.store.AddWallet(context.Background(), wallet, []store.NetworkStart{{Network: network}})
	s.Require().NoError(err)
}

func (s *WalletSuite) row(wallet, network string) store.SyncStatus {
	row, err := s.store.SyncStatus(context.Background(), wallet, network)
	s.Require().NoError(err)
	return row
}

func (s *WalletSuite) solanaWallet(rounds int) (*testchain.SolanaHistory, string) {
	h, err := testchain.BuildSolanaHistory(context.Background(), s.devnet, rounds)
	s.Require().NoError(err)
	return h, h.Wallet.PublicKey().String()
}

func (s *WalletSuite) TestRetriesFollowTheBackfillScheduleAndFiveRetriesAbandon() {
	_, wallet := s.solanaWallet(2)
	s.add(wallet, scan.Solana)
	s.devnet.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"}) // until cleared

	s.env.ExecuteWorkflow(workflows.Backfill, workflows.BackfillInput{Wallet: wallet, Network: scan.Solana, Gen: 1, Policy: testPolicy})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.BackfillResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal(string(store.SyncAbandoned), res.Status)
	s.Equal(5, res.RetryCount)

	s.Require().Len(s.scans, 6, "the first attempt and five retries")
	for i, base := range []time.Duration{2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute} {
		got := s.scans[i+1].Sub(s.scans[i])
		s.GreaterOrEqual(got, base, "retry %d waits min(2 min·2^(retry−1), 60 min)", i+1)
		s.Less(got, base+base/4+time.Second, "retry %d: jitter is at most 25 %%", i+1)
	}
	row := s.row(wallet, scan.Solana)
	s.Equal(store.SyncAbandoned, row.Status)
	s.Equal(5, row.RetryCount)
	s.True(row.NextRetryAt.IsZero(), "an abandoned item is not retried")
	s.Contains(row.LastError, "Internal error")
	s.Equal(6, row.Attempts)

	// Adding the wallet again resets the count and runs it again.
	s.devnet.ClearFaults()
	s.add(wallet, scan.Solana)
	s.Equal(0, s.row(wallet, scan.Solana).RetryCount)
	s.newEnv()
	s.env.ExecuteWorkflow(workflows.Backfill, workflows.BackfillInput{Wallet: wallet, Network: scan.Solana, Gen: 2, Policy: testPolicy})
	s.Require().NoError(s.env.GetWorkflowError())
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal(string(store.SyncCompleted), res.Status)
	row = s.row(wallet, scan.Solana)
	s.Equal(store.SyncCompleted, row.Status)
	s.Zero(row.RetryCount)
	s.Empty(row.LastError)
	s.Positive(row.Transfers)
}

func (s *WalletSuite) TestTheNextRetryTimeIsStoredWhileTheItemWaits() {
	_, wallet := s.solanaWallet(1)
	s.add(wallet, scan.Solana)
	s.devnet.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress", Count: 3}) // one attempt's three reads
	var waiting store.SyncStatus
	s.env.RegisterDelayedCallback(func() { waiting = s.row(wallet, scan.Solana) }, time.Minute)
	s.env.ExecuteWorkflow(workflows.Backfill, workflows.BackfillInput{Wallet: wallet, Network: scan.Solana, Gen: 1, Policy: testPolicy})
	s.Require().NoError(s.env.GetWorkflowError())

	s.Equal(store.SyncFailed, waiting.Status)
	s.Equal(1, waiting.RetryCount)
	s.Require().Len(s.scans, 2)
	s.True(s.scans[1].Truncate(time.Millisecond).Equal(waiting.NextRetryAt), "the retry ran when the status said it would: %v, %v", s.scans[1], waiting.NextRetryAt)
	s.Equal(store.SyncCompleted, s.row(wallet, scan.Solana).Status)
}

// A store that is down when a scan attempt fails (the scan failed because
// of it) keeps FailScan retrying for as long as the outage lasts, ten
// minutes here, far past one attempt's timeout; the failure is then
// recorded and the retry completes the item.
func (s *WalletSuite) TestFailScanOutlastsAStoreOutageAndTheItemStillCompletes() {
	_, wallet := s.solanaWallet(1)
	s.add(wallet, scan.Solana)
	s.devnet.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress", Count: 3}) // one attempt's three reads
	const outage = 10 * time.Minute
	back := s.env.Now().Add(outage)
	failing := 0
	s.env.OnActivity(workflows.FailScanActivity, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in workflows.FailInput) (workflows.FailOutcome, error) {
			if s.env.Now().Before(back) {
				failing++
				return workflows.FailOutcome{}, errors.New("store: fail scan: dial tcp 127.0.0.1:5432: connect: connection refused")
			}
			return s.acts.FailScan(ctx, in)
		})
	s.env.ExecuteWorkflow(workflows.Backfill, workflows.BackfillInput{Wallet: wallet, Network: scan.Solana, Gen: 1, Policy: testPolicy})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError(), "the workflow outlasts the outage")
	var res workflows.BackfillResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal(string(store.SyncCompleted), res.Status)
	s.Greater(failing, 1, "FailScan was retried through the outage")
	s.Require().Len(s.scans, 2, "the failed attempt and its retry")
	s.GreaterOrEqual(s.scans[1].Sub(s.scans[0]), outage+testPolicy.Schedule.Base, "the retry waited out the outage, then the schedule's first delay")
	row := s.row(wallet, scan.Solana)
	s.Equal(store.SyncCompleted, row.Status)
	s.Equal(2, row.Attempts)
}

func (s *WalletSuite) TestAnAddressTheNetworkRejectsFailsAtOnce() {
	wallet := "0x52908400098527886E0F7030069857D2E4169EE7" // an EVM address is no Solana key
	s.add(wallet, scan.Solana)
	s.env.ExecuteWorkflow(workflows.Backfill, workflows.BackfillInput{Wallet: wallet, Network: scan.Solana, Gen: 1, Policy: testPolicy})
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.BackfillResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal(string(store.SyncFailed), res.Status)
	s.Len(s.scans, 1, "a permanent error is not retried")
	row := s.row(wallet, scan.Solana)
	s.Equal(store.SyncFailed, row.Status)
	s.True(row.NextRetryAt.IsZero())
	s.Contains(row.LastError, "not a Solana address")
}

func (s *WalletSuite) TestWalletSyncBackfillsThenReconcilesTheBalances() {
	h, err := testchain.BuildEVMHistory(context.Background(), s.chain, testchain.EVMOptions{Rounds: 8, BlocksPerRound: 5})
	s.Require().NoError(err)
	wallet := strings.ToLower(h.Wallet.Hex())
	s.add(wallet, scan.Etherlink)

	s.env.ExecuteWorkflow(workflows.WalletSync, workflows.WalletSyncInput{Wallet: wallet, Networks: []workflows.NetworkGen{{Network: scan.Etherlink, Gen: 1}}, Policy: testPolicy})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.WalletSyncResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Require().Len(res.Networks, 1)
	s.Equal(string(store.SyncCompleted), res.Networks[0].Status)
	s.Equal(workflows.WalletSummary{Assets: 2, Reconciled: 2}, res.Summary, "native coin and token both reconcile")

	bals, err := s.store.Balances(context.Background(), wallet)
	s.Require().NoError(err)
	s.Require().Len(bals, 2)
	for _, b := range bals {
		s.Require().NotNil(b.Reconciled)
		s.True(*b.Reconciled, "%s: %s", b.Asset, b.Detail)
		s.Equal(b.Chain.String(), b.Computed.String())
	}
	page, _, err := s.store.ListTransfers(context.Background(), store.TransferFilter{Wallet: wallet, Limit: 1000})
	s.Require().NoError(err)
	for _, tr := range page {
		s.NotEmpty(tr.Class, "every transfer is classified once the wallet is done")
	}
}

func (s *WalletSuite) TestAddingTheWalletAgainWakesARetryWaitingItsTurn() {
	_, wallet := s.solanaWallet(2)
	s.add(wallet, scan.Solana)
	s.devnet.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"})
	s.env.RegisterDelayedCallback(func() {
		s.Equal(store.SyncFailed, s.row(wallet, scan.Solana).Status, "waiting for its first retry")
		s.devnet.ClearFaults()
		rows, changed, err := s.store.AddWallet(context.Background(), wallet, []store.NetworkStart{{Network: scan.Solana}})
		s.Require().NoError(err)
		s.True(changed)
		s.env.SignalWorkflow(workflows.SignalSync, workflows.SyncSignal{Networks: []workflows.NetworkGen{{Network: scan.Solana, Gen: rows[0].Gen}}})
	}, 30*time.Second)
	s.env.ExecuteWorkflow(workflows.WalletSync, workflows.WalletSyncInput{Wallet: wallet, Networks: []workflows.NetworkGen{{Network: scan.Solana, Gen: 1}}, Policy: testPolicy})
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.WalletSyncResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal(string(store.SyncCompleted), res.Networks[0].Status)
	s.Require().Len(s.scans, 2)
	s.Less(s.scans[1].Sub(s.scans[0]), 2*time.Minute, "the re-add did not wait for the scheduled retry")
	s.Equal(0, s.row(wallet, scan.Solana).RetryCount)
	s.Equal(workflows.WalletSummary{Assets: 1, Reconciled: 1}, res.Summary)
}

func (s *WalletSuite) TestTheRetryDelayIsCappedAtAnHour() {
	r := workflows.DefaultRetrySchedule
	s.Equal(2*time.Minute, r.Delay(1))
	s.Equal(32*time.Minute, r.Delay(5))
	s.Equal(time.Hour, r.Delay(6))
	s.Equal(time.Hour, r.Delay(1000), "the shift never overflows")
}

// TestAWalletsOtherNetworksGetTheirBalancesWhileOneWaitsForItsRetry adds a
// wallet on two networks, the second of which (a devnet of its own) fails
// and waits for its retry: WalletSync finishes the first meanwhile, and the
// second once its retry completes. Added again with the second failing
// anew, the second's last balances stay readable, stale, while the first's
// are recalculated.
func (s *WalletSuite) TestAWalletsOtherNetworksGetTheirBalancesWhileOneWaitsForItsRetry() {
	const other = "solana-other"
	ctx := context.Background()
	dn, err := devnet.Start(s.T().Context(), devnet.Options{SlotTime: 10 * time.Millisecond})
	s.Require().NoError(err)
	s.T().Cleanup(dn.Stop)
	s.acts.Scanners[other] = solscan.New(solscan.Config{Network: other, RPCURL: dn.URL(), ChunkSize: 10})
	_, wallet := s.solanaWallet(2)
	s.add(wallet, scan.Solana)
	s.add(wallet, other)
	balance := func(network string) store.Balance {
		bals, err := s.store.Balances(ctx, wallet)
		s.Require().NoError(err)
		for _, b := range bals {
			if b.Network == network && b.Asset == store.NativeAsset {
				return b
			}
		}
		s.Require().Failf("no balance", "%s has no native balance", network)
		return store.Balance{}
	}
	run := func(gen int64, whileWaiting func()) workflows.WalletSyncResult {
		dn.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"}) // until cleared
		s.newEnv()
		finishes := 0
		s.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
			if info.ActivityType.Name == "FinishWallet" {
				finishes++
			}
		})
		s.env.RegisterDelayedCallback(func() {
			s.Equal(store.SyncFailed, s.row(wallet, other).Status, "waiting for its first retry")
			s.Equal(1, finishes, "finished while the other network waits")
			whileWaiting()
			dn.ClearFaults()
		}, time.Minute)
		s.env.ExecuteWorkflow(workflows.WalletSync, workflows.WalletSyncInput{Wallet: wallet, Policy: testPolicy,
			Networks: []workflows.NetworkGen{{Network: scan.Solana, Gen: gen}, {Network: other, Gen: gen}}})
		s.Require().True(s.env.IsWorkflowCompleted())
		s.Require().NoError(s.env.GetWorkflowError())
		var res workflows.WalletSyncResult
		s.Require().NoError(s.env.GetWorkflowResult(&res))
		s.Equal(2, finishes, "finished again once the retry completed")
		return res
	}

	var first store.Balance
	res := run(1, func() {
		first = balance(scan.Solana)
		s.False(first.Stale)
		s.Require().NotNil(first.Reconciled, first.Detail)
		s.True(*first.Reconciled, first.Detail)
		page, _, err := s.store.ListTransfers(ctx, store.TransferFilter{Wallet: wallet, Network: scan.Solana, Limit: 1000})
		s.Require().NoError(err)
		s.Require().NotEmpty(page)
		for _, tr := range page {
			s.NotEmpty(tr.Class, "reclassified while the other network waits")
		}
	})
	s.Require().Len(res.Networks, 2)
	for _, n := range res.Networks {
		s.Equal(string(store.SyncCompleted), n.Status, n.Network)
	}
	s.Equal(workflows.WalletSummary{Assets: 2, Reconciled: 2}, res.Summary)
	s.False(balance(other).Stale)
	lastOther := balance(other)

	// Added again, the other network failing anew: its last balance stays
	// readable, stale, while the first network's is recalculated.
	s.add(wallet, scan.Solana)
	s.add(wallet, other)
	run(2, func() {
		b := balance(other)
		s.True(b.Stale)
		s.Require().NotNil(b.Computed)
		s.Equal(lastOther.Computed.String(), b.Computed.String())
		s.True(lastOther.ComputedAt.Equal(b.ComputedAt))
		again := balance(scan.Solana)
		s.False(again.Stale)
		s.True(again.ComputedAt.After(first.ComputedAt))
	})
	s.False(balance(other).Stale)
}
