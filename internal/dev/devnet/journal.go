package devnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"

	"github.com/gagliardetto/solana-go"
)

// The ledger survives restarts, and a SIGKILL, through a journal in
// Options.Dir: an append-only file of records, each framed as
//
//	length (uint32 LE) | CRC-32C of the payload (uint32 LE) | payload
//
// whose payload's first byte says what it is:
//
//	'G' genesis: hash (32) | time (int64 LE) | base height (uint64 LE) | faucet key (64)
//	'C' credit (Fund, a payer funded at genesis): account (32) | lamports (uint64 LE)
//	'B' block: slot − parent slot (uvarint) | time − parent time (varint) |
//	    congestion fee (uvarint) | transactions (uvarint) | each: length (uvarint) | wire bytes
//
// Start replays it: every block is rebuilt on its parent (height, parent
// hash and hash follow from the parent and the slot) and its transactions
// are executed again, which gives back the same signatures, balances, logs
// and statuses. A record cut short or failing its checksum ends the
// journal: it and anything after it are dropped (logged), so a kill in
// the middle of a write loses that block only. Each block is written with
// one write(2) when it is sealed, so it is in the kernel's hands before any
// client can see it; blocks that carry transactions, and credits, are
// also fsynced, so they survive a crash of the machine as well. Empty
// blocks are written too (8 bytes of framing and 5 of payload, ~120 KB an
// hour at 400 ms slots): their hashes and times cannot be derived, and a
// client may hold one of their hashes as a recent blockhash.
const journalFileName = "solana-devnet.journal"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journal appends records to the journal file. A nil journal (no
// Options.Dir) writes nothing.
type journal struct {
	f      *os.File
	log    *slog.Logger
	failed bool // a write failed: logged once, and the journal is no longer written
}

func (j *journal) append(payload []byte, sync bool) {
	if j == nil || j.failed {
		return
	}
	buf := make([]byte, 8, 8+len(payload))
	binary.LittleEndian.PutUint32(buf[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(payload, crcTable))
	buf = append(buf, payload...)
	_, err := j.f.Write(buf)
	if err == nil && sync {
		err = j.f.Sync()
	}
	if err != nil {
		j.failed = true
		j.log.Error("solana devnet: write the ledger journal: blocks from now on are lost at the next restart", "file", j.f.Name(), "error", err)
	}
}

func (j *journal) close() {
	if j != nil {
		_ = j.f.Close()
	}
}

func genesisRecord(g *block, faucet solana.PrivateKey) []byte {
	p := []byte{'G'}
	p = append(p, g.hash[:]...)
	p = binary.LittleEndian.AppendUint64(p, uint64(g.time))
	p = binary.LittleEndian.AppendUint64(p, g.height)
	return append(p, faucet...)
}

func creditRecord(pk solana.PublicKey, lamports uint64) []byte {
	p := append([]byte{'C'}, pk[:]...)
	return binary.LittleEndian.AppendUint64(p, lamports)
}

func blockRecord(b, parent *block) []byte {
	p := []byte{'B'}
	p = binary.AppendUvarint(p, b.slot-parent.slot)
	p = binary.AppendVarint(p, b.time-parent.time)
	p = binary.AppendUvarint(p, b.congestionFee)
	p = binary.AppendUvarint(p, uint64(len(b.txs)))
	for _, r := range b.txs {
		p = binary.AppendUvarint(p, uint64(len(r.p.raw)))
		p = append(p, r.p.raw...)
	}
	return p
}

// replayed is what a journal gave back.
type replayed struct {
	l       *ledger
	faucet  solana.PrivateKey
	good    int64 // bytes of whole, applied records
	dropped int64 // bytes after them (a torn tail)
	reason  string
}

// replayJournal rebuilds the ledger from the journal at path. It returns
// nil (and no error) when the file does not exist or holds no genesis.
func replayJournal(path string) (*replayed, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("solana devnet: open the ledger journal: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("solana devnet: read the ledger journal: %w", err)
	}
	r := &replayed{}
	off := int64(0)
	for off < int64(len(data)) {
		rest := data[off:]
		if len(rest) < 8 {
			r.reason = "a record header cut short"
			break
		}
		n := int64(binary.LittleEndian.Uint32(rest[0:]))
		if n > int64(len(rest))-8 {
			r.reason = "a record cut short"
			break
		}
		payload := rest[8 : 8+n]
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(rest[4:]) {
			r.reason = "a record failing its checksum"
			break
		}
		if err := r.apply(payload); err != nil {
			r.reason = err.Error()
			break
		}
		off += 8 + n
	}
	if r.l == nil {
		return nil, nil
	}
	r.good, r.dropped = off, int64(len(data))-off
	return r, nil
}

// apply replays one record.
func (r *replayed) apply(p []byte) error {
	if len(p) == 0 {
		return errors.New("an empty record")
	}
	kind, p := p[0], p[1:]
	if kind != 'G' && r.l == nil {
		return errors.New("a record before the genesis record")
	}
	switch kind {
	case 'G':
		if r.l != nil || len(p) != 32+8+8+64 {
			return errors.New("a second or malformed genesis record")
		}
		var h solana.Hash
		copy(h[:], p[:32])
		r.l = newLedger(nil, int64(binary.LittleEndian.Uint64(p[32:])), binary.LittleEndian.Uint64(p[40:]), h)
		r.faucet = solana.PrivateKey(append([]byte(nil), p[48:]...))
		return nil
	case 'C':
		if len(p) != 32+8 {
			return errors.New("a malformed credit record")
		}
		r.l.credit(solana.PublicKeyFromBytes(p[:32]), binary.LittleEndian.Uint64(p[32:]))
		return nil
	case 'B':
		return r.applyBlock(p)
	}
	return fmt.Errorf("an unknown record kind %q", kind)
}

func (r *replayed) applyBlock(p []byte) error {
	bad := errors.New("a malformed block record")
	dslot, n := binary.Uvarint(p)
	if n <= 0 || dslot == 0 {
		return bad
	}
	p = p[n:]
	dtime, n := binary.Varint(p)
	if n <= 0 {
		return bad
	}
	p = p[n:]
	fee, n := binary.Uvarint(p)
	if n <= 0 {
		return bad
	}
	p = p[n:]
	count, n := binary.Uvarint(p)
	if n <= 0 || count > uint64(len(p)) {
		return bad
	}
	p = p[n:]
	l := r.l
	parent := l.tip()
	if dslot > math.MaxUint64-parent.slot {
		return bad
	}
	b := l.openBlock(parent.slot+dslot, parent.time+dtime)
	b.congestionFee = fee
	var env execEnv
	if count > 0 {
		env = l.env(b)
	}
	for range count {
		size, n := binary.Uvarint(p)
		if n <= 0 || size > uint64(len(p)-n) {
			return bad
		}
		raw := append([]byte(nil), p[n:n+int(size)]...)
		p = p[n+int(size):]
		tx, perr := parseTx(raw)
		if perr != nil {
			return fmt.Errorf("block at slot %d: %s", b.slot, perr.Message)
		}
		res := execute(tx, env)
		if !res.committed {
			return fmt.Errorf("block at slot %d: transaction %s no longer lands", b.slot, tx.sig)
		}
		l.include(b, tx, res)
	}
	if len(p) != 0 {
		return bad
	}
	l.seal(b)
	return nil
}

// openJournal opens the journal for appending after its good bytes,
// cutting off a torn tail.
func openJournal(path string, good int64, log *slog.Logger) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("solana devnet: open the ledger journal: %w", err)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("solana devnet: cut the ledger journal's torn tail: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("solana devnet: open the ledger journal: %w", err)
	}
	return &journal{f: f, log: log}, nil
}
