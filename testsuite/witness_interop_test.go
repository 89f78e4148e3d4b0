//go:build e2e

package testsuite

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/mod/sumdb/tlog"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", for litewitness's database

	"github.com/keeperhq/keeper/client"
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/tlogwitness"
	"github.com/keeperhq/keeper/receipt/verify"
)

// TestKeeperDevWithTwoLitewitnessesAtQuorumTwoLosesNothingThroughAWitnessOutageAndNoWitnessCosignsAFork
// runs `keeper dev` with two litewitness processes (torchwood, an
// independent c2sp.org/tlog-witness, its keys in an ssh-agent) as its
// witnesses at quorum 2, under 50 evidence/s on both local chains: 60 s
// with both, 60 s with one SIGKILLed, 30 s after it is back on its database.
// Intake does not slow down while receipts wait (409 awaiting_witnesses);
// the quorum cosigns the newest checkpoint within 10 s of the witness's
// return; every evidence ends confirmed with a receipt both cosigned, and a
// sample (some confirmed during the outage) verifies in Go, with `keeper
// verify` and in the /verify page. Then a checkpoint of a cosigned size
// with another root, signed by the log's key, is refused by both
// litewitnesses and by `keeper witness`.
func TestKeeperDevWithTwoLitewitnessesAtQuorumTwoLosesNothingThroughAWitnessOutageAndNoWitnessCosignsAFork(t *testing.T) {
	const quorumWithin = 10 * time.Second
	began := time.Now()
	lwBin := litewitnessBinary(t)
	browser := browsertest.Start(t) // before the stack: without Chromium there is nothing to start it for
	s := startInteropStack(t, lwBin)
	warm := s.warmUp(t)

	// 30 s before the stop give 1,500 timed posts for the p99 it is compared
	// with; the outage lasts a minute; 15 s after it, the
	// quorum is long back (it takes tens of milliseconds).
	run := s.intakeThroughOutage(t, 50, 30*time.Second, 60*time.Second, 15*time.Second)
	t.Logf("witness %s back: checkpoint %d (the newest signed at its restart) quorum-cosigned %v after the restart",
		s.a.key.Name, run.latestAtRestart, run.quorumAfter.Round(time.Millisecond))
	assert.LessOrEqual(t, run.quorumAfter, quorumWithin, "receipts are quorum-cosigned again within %v of the witness's return", quorumWithin)
	checkIntakePace(t, run)

	// Nothing lost: every evidence confirmed, its receipt no longer waiting.
	ids := []string{warm}
	for _, x := range run.samples {
		ids = append(ids, x.id)
	}
	drained := time.Now()
	evs := waitReceipts(t, s.client, ids, 3*time.Minute)
	t.Logf("all %d evidence confirmed with receipts %v after intake stopped", len(ids), time.Since(drained).Round(time.Second))

	root, trustFile := s.trustRoot(t)
	final := witnessedSize(t, s.api, s.signer.Key())
	require.Equal(t, 2, root.Witnesses.QuorumAt(final), "the trust root asks for both")
	for _, ev := range evs {
		_, cosigs, err := root.OpenCheckpoint([]byte(ev.Receipt.Log.Checkpoint))
		require.NoError(t, err, "receipt of %s", ev.ID)
		require.ElementsMatch(t, s.names(), witnessNames(cosigs), "receipt of %s is cosigned by both", ev.ID)
	}
	s.verifyInGo(t, root, evs, run)
	s.verifyWithCLIAndPage(t, browser, trustFile, evs, run)
	s.checkForkRefused(t, run.sizeAtStop, final)
	t.Logf("run %v", time.Since(began).Round(time.Second))
}

// interopStack is `keeper dev` with two litewitnesses as its witnesses at
// quorum 2, signing with a log key the test holds: the litewitnesses'
// databases name it, and the fork is signed with it.
type interopStack struct {
	bin, lwBin, work string
	apiAddr, api     string
	evmURL, solURL   string
	signer           *evlog.Signer
	vkey             string
	a, b             *litewitness
	client           *client.Client
}

func startInteropStack(t *testing.T, lwBin string) *interopStack {
	t.Helper()
	s := &interopStack{bin: keeperBinary(t), lwBin: lwBin, work: t.TempDir()}
	const origin = "interop.keeper.localhost/log"
	skey, vkey, err := evlog.GenerateKey(origin)
	require.NoError(t, err)
	s.signer, err = evlog.NewSigner(skey, origin)
	require.NoError(t, err)
	s.vkey = vkey
	keyFile := filepath.Join(s.work, "log-signer.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(skey+"\n"), 0o600))

	sock := startSSHAgent(t, s.work)
	s.a = startLitewitness(t, lwBin, s.work, sock, "witness-a.interop.localhost", origin, vkey)
	s.b = startLitewitness(t, lwBin, s.work, sock, "witness-b.interop.localhost", origin, vkey)

	tport, apiPort, evmPort, solPort := freePort(t), freePort(t), freePort(t), freePort(t)
	s.apiAddr = fmt.Sprintf("127.0.0.1:%d", apiPort)
	s.api = "http://" + s.apiAddr
	s.evmURL, s.solURL = fmt.Sprintf("http://127.0.0.1:%d", evmPort), fmt.Sprintf("http://127.0.0.1:%d", solPort)
	dev := &proc{name: "keeper-dev", args: []string{"dev"}, log: procLog(t, s.work, "keeper-dev"), env: []string{
		"KEEPER_DATA_DIR=" + filepath.Join(s.work, "data"), "KEEPER_LOG_LEVEL=warn", "KEEPER_CHAINS=etherlink,solana",
		"KEEPER_HTTP_ADDR=" + s.apiAddr, fmt.Sprintf("KEEPER_DEV_TEMPORAL_PORT=%d", tport), "KEEPER_DEV_UI_PORT=0",
		fmt.Sprintf("KEEPER_DEV_EVM_PORT=%d", evmPort), fmt.Sprintf("KEEPER_DEV_SOLANA_PORT=%d", solPort),
		"KEEPER_DEV_EVM_BLOCK_MS=200", "KEEPER_DEV_SOLANA_SLOT_MS=50", "KEEPER_DEV_WITNESSES=0",
		"KEEPER_LOG_KEY_FILE=" + keyFile, "KEEPER_LOG_ORIGIN=" + origin,
		"KEEPER_LOG_WITNESSES=" + s.a.entry() + "," + s.b.entry(), "KEEPER_LOG_WITNESS_QUORUM=2",
	}}
	killAtCleanup(t, dev)
	dev.start(t, s.bin)
	waitPort(t, apiPort, 2*time.Minute)
	require.Eventually(t, func() bool { return readWitnessReadiness(t, s.api).Ready }, 2*time.Minute, 250*time.Millisecond, "keeper dev is ready")
	s.client = client.New(s.api)
	return s
}

func (s *interopStack) names() []string { return []string{s.a.key.Name, s.b.key.Name} }

// warmUp has both witnesses cosign a checkpoint holding one evidence before
// the clock starts, and returns the evidence (its receipt is checked with
// the others').
func (s *interopStack) warmUp(t *testing.T) string {
	t.Helper()
	code, id, err := post(&http.Client{Timeout: 10 * time.Second}, s.apiAddr, map[string]any{"digest": digest(t.Name()+"/warm-up", 0), "chains": []string{"etherlink", "solana"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool { return readWitnessReadiness(t, s.api).Witnesses.WitnessedSize > 0 }, time.Minute, 100*time.Millisecond,
		"both witnesses cosign the log's first checkpoint")
	return id
}

// outageRun is what a steady intake through a witness's outage saw.
type outageRun struct {
	samples                  []intakeSample
	began, stopAt, restartAt time.Time
	sizeAtStop               uint64   // the witnessed size when the witness was killed
	waited                   []string // evidence confirmed during the outage, whose receipts waited
	latestAtRestart          uint64   // the newest checkpoint's size when the witness restarted
	quorumAfter              time.Duration
}

// intakeThroughOutage posts rate evidence a second for before with both
// witnesses, for outage with witness a SIGKILLed, and for after once it is
// restarted on its database and agent.
func (s *interopStack) intakeThroughOutage(t *testing.T, rate float64, before, outage, after time.Duration) outageRun {
	t.Helper()
	var run outageRun
	in := &timedIntake{api: s.apiAddr, prefix: t.Name(), hc: intakeClient()}
	stop, done := make(chan struct{}), make(chan struct{})
	run.began = time.Now()
	go func() { defer close(done); in.run(rate, stop) }()
	time.Sleep(time.Until(run.began.Add(before)))
	run.sizeAtStop = witnessedSize(t, s.api, s.signer.Key())
	run.stopAt = time.Now()
	s.a.p.kill()
	run.waited = watchOutage(t, s.client, in, s.a.key.Name, s.api, run.stopAt, run.stopAt.Add(outage))
	run.latestAtRestart = readWitnessReadiness(t, s.api).Witnesses.LatestSize
	run.restartAt = time.Now()
	s.a.p.start(t, s.lwBin)
	run.quorumAfter = waitWitnessed(t, s.api, s.signer.Key(), run.latestAtRestart, time.Minute)
	time.Sleep(time.Until(run.restartAt.Add(after)))
	close(stop)
	<-done
	run.samples = in.all()
	return run
}

// checkIntakePace asserts every post was accepted and the intake's p99
// during the outage is within 20 % of its p99 before.
func checkIntakePace(t *testing.T, run outageRun) {
	t.Helper()
	// 20 % of a p99 of a few milliseconds is scheduling noise on a shared
	// two-core machine, not anything a client sees: allow at least 5 ms.
	const ratio, slack = 1.2, 5 * time.Millisecond
	for _, x := range run.samples {
		require.NoError(t, x.err, "evidence %d", x.i)
		require.Equal(t, http.StatusAccepted, x.code, "evidence %d is accepted, whatever the witnesses", x.i)
	}
	before, nBefore := p99(run.samples, run.began, run.stopAt)
	during, nDuring := p99(run.samples, run.stopAt, run.restartAt)
	allowed := max(time.Duration(float64(before)*ratio), before+slack)
	t.Logf("intake: %d evidence accepted in %v; p99 %v before the stop (%d posts), %v during it (%d posts): %+.0f %%, within 20 %%: %v; allowed %v",
		len(run.samples), run.samples[len(run.samples)-1].at.Sub(run.began).Round(time.Second),
		before.Round(10*time.Microsecond), nBefore, during.Round(10*time.Microsecond), nDuring,
		100*(float64(during)/float64(before)-1), float64(during) <= float64(before)*ratio, allowed.Round(10*time.Microsecond))
	assert.LessOrEqual(t, during, allowed, "intake p99 during the outage (%v) within 20%% of before (%v), or %v more", during, before, slack)
}

// trustRoot reads the trust root the log serves, its signature checked
// with the log's key, and writes it to a file as a verifier pins it.
func (s *interopStack) trustRoot(t *testing.T) (trust.Root, string) {
	t.Helper()
	note := getOK(t, s.api+"/log/trust")
	key := s.signer.Key()
	root, err := trust.Open(note, &key)
	require.NoError(t, err)
	file := filepath.Join(s.work, "trust")
	require.NoError(t, os.WriteFile(file, note, 0o644))
	return root, file
}

// verifyInGo checks a sample of receipts against the chains with
// receipt/verify: before the outage, confirmed during it (their receipts
// waited), and after.
func (s *interopStack) verifyInGo(t *testing.T, root trust.Root, evs map[string]*client.Evidence, run outageRun) {
	t.Helper()
	var beforeIDs, afterIDs []string
	for _, x := range run.samples {
		switch {
		case x.at.Before(run.stopAt):
			beforeIDs = append(beforeIDs, x.id)
		case !x.at.Before(run.restartAt):
			afterIDs = append(afterIDs, x.id)
		}
	}
	beforeIDs, afterIDs = spread(beforeIDs, 5), spread(afterIDs, 5)
	sample := slices.Concat(beforeIDs, run.waited, afterIDs)
	opts := verify.Options{Trust: &root, RPC: map[string]string{"etherlink": s.evmURL, "solana": s.solURL}, Clocks: []string{"etherlink", "solana"}}
	for _, id := range sample {
		rep := verify.Check(context.Background(), *evs[id].Receipt, opts)
		require.True(t, rep.OK, "receipt of %s: %s: %s", id, rep.Check, rep.Reason)
		require.NotEmpty(t, rep.Clocks, "receipt of %s: the local chains' clocks bound it", id)
		for _, res := range rep.Results {
			require.ElementsMatch(t, s.names(), res.Witnesses, "receipt of %s on %s", id, res.Chain)
		}
	}
	t.Logf("verified in Go: %d receipts (%d before the outage, %d confirmed during it, %d after), each cosigned by %s; all %d receipts carry both cosignatures",
		len(sample), len(beforeIDs), len(run.waited), len(afterIDs), strings.Join(s.names(), " and "), len(evs))
}

// verifyWithCLIAndPage checks receipts confirmed during the outage and
// after it with `keeper verify` and in the /verify page, pinning the trust
// root's file.
func (s *interopStack) verifyWithCLIAndPage(t *testing.T, browser context.Context, trustFile string, evs map[string]*client.Evidence, run outageRun) {
	t.Helper()
	files := t.TempDir()
	ids := []string{run.waited[0], run.samples[len(run.samples)-1].id}
	for _, id := range ids {
		path := writeReceipt(t, files, id, receiptJSON(t, s.api, id))
		out, err := exec.Command(s.bin, "verify", path, "--trust", trustFile, "--rpc", "etherlink="+s.evmURL, "--rpc", "solana="+s.solURL,
			"--clock", "etherlink", "--clock", "solana").CombinedOutput()
		require.NoError(t, err, "keeper verify %s:\n%s", id, out)
		assert.Contains(t, string(out), "cosigned by", "keeper verify %s:\n%s", id, out)
		for _, name := range s.names() {
			assert.Contains(t, string(out), name, "keeper verify %s names the witness:\n%s", id, out)
		}
	}
	t.Logf("keeper verify --trust: %d receipts (one confirmed during the outage) exit 0, cosigned by both", len(ids))

	id := run.waited[len(run.waited)-1]
	var clocks []string
	for _, an := range evs[id].Receipt.Anchors {
		clocks = append(clocks, an.Network)
	}
	page := browsertest.Verify(t, browser, browsertest.Run{Page: s.api + "/verify", Receipt: writeReceipt(t, files, "page", receiptJSON(t, s.api, id)),
		Trust: trustFile, Clocks: strings.Join(clocks, " "), Endpoints: map[string]string{"etherlink": s.evmURL, "solana": s.solURL}})
	require.Equal(t, "ok", page.Result, page.Text)
	for _, chain := range []string{"etherlink", "solana"} {
		result, check := page.Chain(t, chain)
		require.Equal(t, "ok", result, "the page on %s failed at %s", chain, check)
		for _, name := range s.names() {
			assert.Contains(t, page.Chains[indexOf(page, chain)].Text, name, "the page names the witnesses that cosigned")
		}
	}
	t.Logf("the /verify page: receipt of %s (confirmed during the outage) ok on both chains: %s", id, page.Bound)
}

// checkForkRefused starts `keeper witness`, has it cosign the genuine
// checkpoints first and last, then asks it and both litewitnesses to
// cosign another root at the size they cosigned, signed by the log's key.
// Each refuses, and still cosigns the genuine checkpoint of that size.
func (s *interopStack) checkForkRefused(t *testing.T, first, last uint64) {
	t.Helper()
	kw := startKeeperWitness(t, s.bin, s.work, s.vkey)
	feedKeeperWitness(t, kw, s.api, s.signer.Key(), first, last)
	lc, err := evlog.NewClient(s.api+"/log", nil)
	require.NoError(t, err)
	var answers []string
	for _, w := range []struct {
		name, url string
		exact     int // the status asked for, or 0 for any refusal
	}{{s.a.key.Name, s.a.url(), 0}, {s.b.key.Name, s.b.url(), 0}, {kw.key.Name, kw.url, http.StatusUnprocessableEntity}} {
		status, body, size := askFork(t, w.url, s.signer, last)
		assert.NotEqual(t, http.StatusOK, status, "%s cosigned another root at size %d: %s", w.name, size, body)
		assert.NotContains(t, string(body), "— ", "%s answered a cosignature line", w.name)
		if w.exact != 0 {
			assert.Equal(t, w.exact, status, "%s: the old size equal to the size cosigned, with another root, is 422 (tlogwitness.Check)", w.name)
		}
		answers = append(answers, fmt.Sprintf("%s answered %d %q (at size %d)", w.name, status, strings.TrimSpace(string(body)), size))
		cp, err := lc.CheckpointAt(context.Background(), size)
		require.NoError(t, err)
		status, body = postAddCheckpoint(t, w.url, tlogwitness.AddCheckpoint{OldSize: size, Checkpoint: cp})
		assert.Equal(t, http.StatusOK, status, "%s, the genuine checkpoint %d again: %s", w.name, size, body)
	}
	t.Logf("a fork at a cosigned size (keeper witness fed sizes %d, then %d with a consistency proof): %s", first, last, strings.Join(answers, "; "))
}

// litewitnessBinary is .tools/litewitness, which .ci/run installs with
// the ssh-agent that holds its key; without them CI fails and a developer
// skips.
func litewitnessBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", ".tools", "litewitness"))
	require.NoError(t, err)
	var missing []string
	if _, err := os.Stat(bin); err != nil {
		missing = append(missing, bin)
	}
	for _, tool := range []string{"ssh-agent", "ssh-add"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return bin
	}
	install := "from the repository root, GOBIN=$PWD/.tools go install filippo.io/torchwood/cmd/litewitness@v0.6.1; apt-get install -y openssh-client"
	if os.Getenv("CI") == "true" {
		t.Fatalf("missing %s: .ci/run's step \"litewitness (torchwood v0.6.1 ...) into .tools, and ssh-agent\" installs them (%s)", strings.Join(missing, ", "), install)
	}
	t.Skipf("missing %s; install with: %s", strings.Join(missing, ", "), install)
	return ""
}

// startSSHAgent runs an ssh-agent for the litewitnesses' keys and returns
// its socket, in a short directory of its own (a socket path holds at most
// 107 bytes, less than a test's temporary directory may take).
func startSSHAgent(t *testing.T, work string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kw-agent-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	agent := &proc{name: "ssh-agent", args: []string{"-D", "-a", sock}, log: procLog(t, work, "ssh-agent")}
	killAtCleanup(t, agent)
	path, err := exec.LookPath("ssh-agent")
	require.NoError(t, err)
	agent.start(t, path)
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 10*time.Second, 20*time.Millisecond, "ssh-agent's socket")
	return sock
}

// litewitness is one litewitness process witnessing the log.
type litewitness struct {
	key  evlog.WitnessKey
	port int
	p    *proc
}

func (w *litewitness) url() string { return fmt.Sprintf("http://127.0.0.1:%d", w.port) }

// entry is the witness's entry of KEEPER_LOG_WITNESSES.
func (w *litewitness) entry() string { return w.key.Text + " " + w.url() }

// startLitewitness makes a witness key, adds it to the agent at sock as an
// OpenSSH key, makes litewitness's database knowing the log (its origin at
// size 0, and its key), and starts litewitness on a free port.
func startLitewitness(t *testing.T, bin, work, sock, name, origin, logVKey string) *litewitness {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed)
	wit, err := evlog.NewWitness(name, seed)
	require.NoError(t, err)
	priv := ed25519.NewKeyFromSeed(seed)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	keyFile := filepath.Join(work, name+".ssh")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600))
	add := exec.Command("ssh-add", keyFile)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	out, err := add.CombinedOutput()
	require.NoError(t, err, "ssh-add: %s", out)
	pub, err := ssh.NewPublicKey(priv.Public())
	require.NoError(t, err)

	db := filepath.Join(work, name+".db")
	knowLog(t, db, origin, logVKey)
	w := &litewitness{key: wit.Key(), port: freePort(t)}
	w.p = &proc{name: name, log: procLog(t, work, name), args: []string{"-db", db, "-name", name, "-key", ssh.FingerprintSHA256(pub),
		"-ssh-agent", sock, "-listen", fmt.Sprintf("127.0.0.1:%d", w.port)}}
	killAtCleanup(t, w.p)
	w.p.start(t, bin)
	waitPort(t, w.port, 30*time.Second)
	return w
}

// knowLog writes litewitness's database (its schema, from torchwood's
// internal/witness OpenDB, which creates tables only if missing) with the
// log at size 0 and its key, as witnessctl add-log would.
func knowLog(t *testing.T, path, origin, logVKey string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	empty := sha256.Sum256(nil)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`CREATE TABLE IF NOT EXISTS log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL)`, nil},
		{`CREATE TABLE IF NOT EXISTS key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin))`, nil},
		{`INSERT INTO log (origin, tree_size, tree_hash) VALUES (?, 0, ?)`, []any{origin, base64.StdEncoding.EncodeToString(empty[:])}},
		{`INSERT INTO key (origin, key) VALUES (?, ?)`, []any{origin, logVKey}},
	} {
		_, err := db.Exec(q.sql, q.args...)
		require.NoError(t, err, q.sql)
	}
}

// keeperWitness is a `keeper witness` process.
type keeperWitness struct {
	key evlog.WitnessKey
	url string
}

// startKeeperWitness makes a key with `keeper witness keygen` and starts
// `keeper witness` for the log.
func startKeeperWitness(t *testing.T, bin, work, logVKey string) keeperWitness {
	t.Helper()
	keyFile := filepath.Join(work, "keeper-witness.key")
	out, err := exec.Command(bin, "witness", "keygen", "--name", "keeper-witness.interop.localhost", "--out", keyFile).CombinedOutput()
	require.NoError(t, err, "%s", out)
	skey, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	signer, err := evlog.ParseWitnessSigner(strings.TrimSpace(string(skey)))
	require.NoError(t, err)
	port := freePort(t)
	p := &proc{name: "keeper-witness", log: procLog(t, work, "keeper-witness"), env: []string{"KEEPER_LOG_LEVEL=warn"},
		args: []string{"witness", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--db", filepath.Join(work, "keeper-witness.db"),
			"--key-file", keyFile, "--log", logVKey}}
	killAtCleanup(t, p)
	p.start(t, bin)
	waitPort(t, port, 30*time.Second)
	return keeperWitness{key: signer.Key(), url: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

// feedKeeperWitness has the witness cosign the log's genuine checkpoints:
// from 0 to first, then to last with a consistency proof read from the
// log's tiles.
func feedKeeperWitness(t *testing.T, w keeperWitness, api string, logKey evlog.Key, first, last uint64) {
	t.Helper()
	ctx := context.Background()
	lc, err := evlog.NewClient(api+"/log", nil)
	require.NoError(t, err)
	cp0, err := lc.CheckpointAt(ctx, first)
	require.NoError(t, err)
	cp1, err := lc.CheckpointAt(ctx, last)
	require.NoError(t, err)
	head, err := logKey.Open(cp1)
	require.NoError(t, err)
	proof, err := tlog.ProveTree(int64(last), int64(first), lc.HashReader(ctx, last, head.Root))
	require.NoError(t, err)
	req1 := tlogwitness.AddCheckpoint{OldSize: first, Checkpoint: cp1}
	for _, h := range proof {
		req1.Proof = append(req1.Proof, h)
	}
	for _, r := range []tlogwitness.AddCheckpoint{{Checkpoint: cp0}, req1} {
		status, body := postAddCheckpoint(t, w.url, r)
		require.Equal(t, http.StatusOK, status, "keeper witness, from %d: %s", r.OldSize, body)
		_, cosigs, err := evlog.OpenCosigned(append(bytes.Clone(r.Checkpoint), body...), logKey, []evlog.WitnessKey{w.key})
		require.NoError(t, err)
		require.Len(t, cosigs, 1, "keeper witness's cosignature")
	}
}

// askFork asks the witness at url to cosign a checkpoint of size with
// another root, as the size it holds: a 409 names the size it holds, asked
// again at that one. It returns the answer and the size asked.
func askFork(t *testing.T, url string, signer *evlog.Signer, size uint64) (int, []byte, uint64) {
	t.Helper()
	other := sha256.Sum256([]byte("another history"))
	for range 5 {
		fork, err := signer.Sign(evlog.Checkpoint{Origin: signer.Origin(), Size: size, Root: other})
		require.NoError(t, err)
		status, body := postAddCheckpoint(t, url, tlogwitness.AddCheckpoint{OldSize: size, Checkpoint: fork})
		if status != http.StatusConflict {
			return status, body, size
		}
		size, err = tlogwitness.ParseConflict(body)
		require.NoError(t, err)
	}
	require.FailNow(t, "the witness's size kept changing", url)
	return 0, nil, 0
}

func postAddCheckpoint(t *testing.T, url string, r tlogwitness.AddCheckpoint) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url+tlogwitness.AddCheckpointPath, "text/plain", bytes.NewReader(r.Marshal()))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// intakeSample is one timed POST /v1/evidence.
type intakeSample struct {
	i    int
	at   time.Time // when it was sent
	took time.Duration
	code int
	id   string
	err  error
}

// timedIntake posts evidence on both chains at a steady rate, each POST
// from its own goroutine so a slow answer delays no other, and times them.
type timedIntake struct {
	api, prefix string
	hc          *http.Client
	mu          sync.Mutex
	samples     []intakeSample
}

func intakeClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // connections are reused, as a steady client's are
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}
}

// run posts rate evidence a second until stop closes, then waits for the
// posts in flight.
func (in *timedIntake) run(rate float64, stop <-chan struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	tick := time.NewTimer(0)
	defer tick.Stop()
	for i := 0; ; i++ {
		tick.Reset(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		wg.Go(func() {
			at := time.Now()
			code, id, err := post(in.hc, in.api, map[string]any{"digest": digest(in.prefix, i), "chains": []string{"etherlink", "solana"}})
			s := intakeSample{i: i, at: at, took: time.Since(at), code: code, id: id, err: err}
			in.mu.Lock()
			in.samples = append(in.samples, s)
			in.mu.Unlock()
		})
	}
}

func (in *timedIntake) all() []intakeSample {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := slices.Clone(in.samples)
	slices.SortFunc(out, func(x, y intakeSample) int { return x.i - y.i })
	return out
}

// p99 is the 99th percentile of the time taken by the posts sent in [from, to).
func p99(samples []intakeSample, from, to time.Time) (time.Duration, int) {
	var took []time.Duration
	for _, s := range samples {
		if !s.at.Before(from) && s.at.Before(to) {
			took = append(took, s.took)
		}
	}
	if len(took) == 0 {
		return 0, 0
	}
	slices.Sort(took)
	return took[(len(took)*99+99)/100-1], len(took)
}

// watchOutage watches until `until` (and no less) while the witness is out: readiness
// holds, /readyz names the witness failing, and evidence sent after the
// stop that is confirmed has a receipt waiting (409 awaiting_witnesses).
// It returns the evidence seen confirmed and waiting.
func watchOutage(t *testing.T, cl *client.Client, in *timedIntake, witness, api string, stopAt, until time.Time) []string {
	t.Helper()
	var waiting []string
	ctx := context.Background()
	next := stopAt.Add(2 * time.Second) // sent after the stop, in no checkpoint cosigned before it
	for ; time.Now().Before(until); time.Sleep(time.Second) {
		// The first evidence sent from next on. Anchors are final on the
		// local EtherLink-like chain about 35 s after they are sent
		// (docs/log.md), so those confirmed in a 60 s outage were sent in
		// its first 20 s or so.
		sent := in.all()
		i := slices.IndexFunc(sent, func(s intakeSample) bool { return !s.at.Before(next) })
		if i < 0 || len(waiting) == 10 {
			continue
		}
		cand := sent[i]
		ev, err := cl.Evidence(ctx, cand.id)
		require.NoError(t, err)
		if ev.Status != client.StatusConfirmed {
			continue
		}
		next = cand.at.Add(2 * time.Second)
		require.Nil(t, ev.Receipt, "evidence %s sent during the outage has no receipt before the quorum cosigns", ev.ID)
		require.NotEmpty(t, ev.ReceiptWaits, "evidence %s says its receipt waits", ev.ID)
		_, err = cl.Receipt(ctx, ev.ID)
		require.True(t, client.IsCode(err, "awaiting_witnesses"), "GET receipt of %s: %v", ev.ID, err)
		if len(waiting) == 0 {
			r := readWitnessReadiness(t, api)
			require.True(t, r.Ready, "a witness outage never fails readiness")
			require.Positive(t, r.Witnesses.LagEntries)
			i := slices.IndexFunc(r.Witnesses.Status, func(s logsvc.WitnessStatus) bool { return s.Name == witness })
			require.GreaterOrEqual(t, i, 0, "/readyz lists %s", witness)
			require.False(t, r.Witnesses.Status[i].OK, "/readyz says %s fails", witness)
			t.Logf("outage: %s receipt_waits %q; /readyz lag %d entries (witnessed %d, latest %d), %s: %s", ev.ID, ev.ReceiptWaits,
				r.Witnesses.LagEntries, r.Witnesses.WitnessedSize, r.Witnesses.LatestSize, witness, r.Witnesses.Status[i].Reason)
		}
		waiting = append(waiting, ev.ID)
	}
	require.GreaterOrEqual(t, len(waiting), 3, "evidence confirmed during the outage, whose receipts waited")
	return waiting
}

// witnessReadiness is /readyz's answer with its witnesses member.
type witnessReadiness struct {
	Ready     bool `json:"ready"`
	Witnesses struct {
		LatestSize    uint64                 `json:"latest_size"`
		WitnessedSize uint64                 `json:"witnessed_size"`
		LagEntries    uint64                 `json:"lag_entries"`
		Status        []logsvc.WitnessStatus `json:"status"`
	} `json:"witnesses"`
}

// readWitnessReadiness reads /readyz, ready (200) or not (503).
func readWitnessReadiness(t *testing.T, api string) witnessReadiness {
	t.Helper()
	var r witnessReadiness
	resp, err := http.Get(api + "/readyz")
	if err != nil {
		return r
	}
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return r
}

// witnessedSize is the size of the checkpoint /log/checkpoint serves: the
// newest the quorum cosigned.
func witnessedSize(t *testing.T, api string, key evlog.Key) uint64 {
	t.Helper()
	c, err := key.Open(getOK(t, api+"/log/checkpoint"))
	require.NoError(t, err)
	return c.Size
}

// waitWitnessed waits until the witnessed checkpoint is at least size and
// returns how long that took.
func waitWitnessed(t *testing.T, api string, key evlog.Key, size uint64, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for witnessedSize(t, api, key) < size {
		require.Less(t, time.Since(start), within, "checkpoint %d quorum-cosigned", size)
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// waitReceipts asks for every evidence until each is confirmed with its
// receipt (receipt_waits cleared) and returns them by id.
func waitReceipts(t *testing.T, cl *client.Client, ids []string, within time.Duration) map[string]*client.Evidence {
	t.Helper()
	deadline := time.Now().Add(within)
	got := make(map[string]*client.Evidence, len(ids))
	for pending := ids; ; time.Sleep(time.Second) {
		var mu sync.Mutex
		var still []string
		var last *client.Evidence
		var lastErr error
		jobs := make(chan string)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for id := range jobs {
					ev, err := cl.Evidence(context.Background(), id)
					mu.Lock()
					if err == nil && ev.Status == client.StatusConfirmed && ev.Receipt != nil && ev.ReceiptWaits == "" {
						got[id] = ev
					} else {
						still, last, lastErr = append(still, id), ev, err
					}
					mu.Unlock()
				}
			})
		}
		for _, id := range pending {
			jobs <- id
		}
		close(jobs)
		wg.Wait()
		if len(still) == 0 {
			return got
		}
		if last != nil {
			require.NotEqual(t, client.StatusDeadLetter, last.Status, "evidence %s: %s", last.ID, last.LastError)
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "not every evidence has its receipt", "%d of %d still wait after %v; the last: %+v (%v)", len(still), len(ids), within, last, lastErr)
		}
		pending = still
	}
}

// getOK GETs url and returns its body as served, requiring 200.
func getOK(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
	return body
}

func witnessNames(cosigs []evlog.Cosignature) []string {
	var out []string
	for _, c := range cosigs {
		out = append(out, c.Witness)
	}
	return out
}

// spread picks n of ids, evenly spaced.
func spread(ids []string, n int) []string {
	if len(ids) <= n {
		return ids
	}
	out := make([]string, n)
	for k := range n {
		out[k] = ids[k*(len(ids)-1)/max(n-1, 1)]
	}
	return out
}
