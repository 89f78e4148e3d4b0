package devnet

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"
)

// view is a copy-on-write overlay of account balances.
type view struct {
	parent *view
	base   func(solana.PublicKey) uint64
	writes map[solana.PublicKey]uint64
}

func newView(base func(solana.PublicKey) uint64) *view {
	return &view{base: base, writes: map[solana.PublicKey]uint64{}}
}

func (v *view) child() *view {
	return &view{parent: v, writes: map[solana.PublicKey]uint64{}}
}

func (v *view) get(pk solana.PublicKey) uint64 {
	if x, ok := v.writes[pk]; ok {
		return x
	}
	if v.parent != nil {
		return v.parent.get(pk)
	}
	return v.base(pk)
}

func (v *view) set(pk solana.PublicKey, lamports uint64) { v.writes[pk] = lamports }

// mergeInto copies v's writes into its parent.
func (v *view) mergeInto() {
	for k, x := range v.writes {
		v.parent.writes[k] = x
	}
}

// execEnv is the bank a transaction runs against.
type execEnv struct {
	hashOK func(solana.Hash) bool      // recent blockhash check
	seen   func(solana.Signature) bool // status cache check
	state  *view
}

// execResult is the outcome of running a transaction.
type execResult struct {
	err       *txError
	committed bool // included in a block (fee charged); false: rejected before loading
	fee       uint64
	budget    budget
	pre, post []uint64
	logs      []string // nil: null in JSON (transaction failed to load)
	cu        uint64
	writes    map[solana.PublicKey]uint64 // state to commit when committed
}

// execute runs p against env, the way a bank processes a transaction:
// age and status-cache checks, compute budget, fee payer validation, program
// loading (fee-only failure), then the instructions, atomically.
func execute(p *parsedTx, env execEnv) *execResult {
	m := &p.tx.Message
	res := &execResult{}
	if !env.hashOK(m.RecentBlockhash) {
		res.err = newTxError("BlockhashNotFound")
		return res
	}
	if env.seen(p.sig) {
		res.err = newTxError("AlreadyProcessed")
		return res
	}
	b, berr := parseBudget(m)
	if berr != nil {
		res.err = berr
		return res
	}
	res.budget = b
	res.fee = b.fee(len(p.tx.Signatures))

	st := env.state.child()
	res.pre = make([]uint64, len(p.keys))
	for i, k := range p.keys {
		res.pre[i] = st.get(k)
	}
	if res.err = chargeFee(p, st, res.fee); res.err != nil {
		return res
	}
	res.committed = true
	snapshot := func() {
		res.post = make([]uint64, len(p.keys))
		for i, k := range p.keys {
			res.post[i] = st.get(k)
		}
		res.writes = st.writes
	}
	if res.err = loadPrograms(p, st); res.err != nil {
		snapshot()
		return res
	}
	postFee := st // balances after the fee debit
	exec := st.child()
	if res.err = res.runInstructions(p, exec, b.limit); res.err != nil {
		snapshot() // st holds only the fee debit
		return res
	}
	if res.err = rentPaid(p, postFee, exec); res.err != nil {
		snapshot()
		return res
	}
	exec.mergeInto()
	snapshot()
	return res
}

// chargeFee debits fee from the fee payer, p's first account, in st.
func chargeFee(p *parsedTx, st *view, fee uint64) *txError {
	payer := p.keys[0]
	if _, isProgram := builtinProgramState[payer]; isProgram {
		return newTxError("InvalidAccountForFee")
	}
	payerBal := st.get(payer)
	if payerBal == 0 {
		return newTxError("AccountNotFound")
	}
	if payerBal < fee || !rentTransitionOK(payerBal, payerBal-fee) {
		return newTxError("InsufficientFundsForFee")
	}
	st.set(payer, payerBal-fee)
	return nil
}

// loadPrograms loads the programs p's instructions call: a missing or
// non-executable program is a fee-only failure.
func loadPrograms(p *parsedTx, st *view) *txError {
	for _, ix := range p.tx.Message.Instructions {
		prog := p.keys[ix.ProgramIDIndex]
		if _, ok := builtinProgramState[prog]; ok {
			continue
		}
		if st.get(prog) > 0 {
			return newTxError("InvalidProgramForExecution")
		}
		return newTxError("ProgramAccountNotFound")
	}
	return nil
}

// runInstructions runs p's instructions in order against exec within the
// compute limit, logging and counting their compute units into res; it
// stops at the first that fails.
func (res *execResult) runInstructions(p *parsedTx, exec *view, limit uint64) *txError {
	res.logs = []string{}
	remaining := limit
	for i, ix := range p.tx.Message.Instructions {
		prog := p.keys[ix.ProgramIDIndex]
		res.logs = append(res.logs, fmt.Sprintf("Program %s invoke [1]", prog))
		var (
			logs []string
			cu   uint64
			ierr *txError
		)
		switch prog {
		case solana.ComputeBudget:
			cu = 150
		case solana.SystemProgramID:
			logs, cu, ierr = runSystem(p, i, ix, exec)
		case solana.MemoProgramID, memoV1ProgramID:
			logs, cu, ierr = runMemo(p, i, ix, prog == memoV1ProgramID)
		}
		res.logs = append(res.logs, logs...)
		builtin := builtinProgramState[prog].builtin
		if cu > remaining {
			if !builtin {
				res.logs = append(res.logs, fmt.Sprintf("Program %s consumed %d of %d compute units", prog, remaining, remaining))
			}
			res.cu += remaining
			ierr = instructionError(i, "ComputationalBudgetExceeded")
		} else {
			if !builtin {
				res.logs = append(res.logs, fmt.Sprintf("Program %s consumed %d of %d compute units", prog, cu, remaining))
			}
			res.cu += cu
			remaining -= cu
		}
		if ierr != nil {
			res.logs = append(res.logs, fmt.Sprintf("Program %s failed: %s", prog, ierr.instr))
			return ierr
		}
		res.logs = append(res.logs, fmt.Sprintf("Program %s success", prog))
	}
	return nil
}

// rentPaid checks that no writable account is left rent-paying by the
// transaction: from its balance after the fee (postFee) to after the
// instructions (exec).
func rentPaid(p *parsedTx, postFee, exec *view) *txError {
	for i, k := range p.keys {
		if !p.writable[i] {
			continue
		}
		if !rentTransitionOK(postFee.get(k), exec.get(k)) {
			return &txError{kind: "InsufficientFundsForRent", index: i}
		}
	}
	return nil
}

// rentTransitionOK: an account may end rent-exempt or empty; it may stay
// rent-paying only if it already was and did not grow.
func rentTransitionOK(pre, post uint64) bool {
	if post == 0 || post >= rentExemptMinimum {
		return true
	}
	return pre > 0 && pre < rentExemptMinimum && post <= pre
}

// runSystem executes a System Program instruction. Only Transfer is supported.
func runSystem(p *parsedTx, i int, ix solana.CompiledInstruction, st *view) ([]string, uint64, *txError) {
	const cu = 150
	d := []byte(ix.Data)
	if len(d) < 4 {
		return nil, cu, instructionError(i, "InvalidInstructionData")
	}
	kind := binary.LittleEndian.Uint32(d)
	if kind != 2 {
		if kind <= 12 {
			return []string{fmt.Sprintf("Program log: devnet: system instruction %d is not supported", kind)}, cu,
				instructionError(i, "InvalidInstructionData")
		}
		return nil, cu, instructionError(i, "InvalidInstructionData")
	}
	if len(d) < 12 {
		return nil, cu, instructionError(i, "InvalidInstructionData")
	}
	lamports := binary.LittleEndian.Uint64(d[4:])
	if len(ix.Accounts) < 2 {
		return nil, cu, instructionError(i, "NotEnoughAccountKeys")
	}
	from, to := ix.Accounts[0], ix.Accounts[1]
	fromKey, toKey := p.keys[from], p.keys[to]
	if !p.signer[from] {
		return []string{fmt.Sprintf("Transfer: `from` account %s must sign", fromKey)}, cu,
			instructionError(i, "MissingRequiredSignature")
	}
	if lamports > 0 && (!p.writable[from] || !p.writable[to]) {
		return nil, cu, instructionError(i, "ReadonlyLamportChange")
	}
	bal := st.get(fromKey)
	if bal < lamports {
		return []string{fmt.Sprintf("Transfer: insufficient lamports %d, need %d", bal, lamports)}, cu,
			customInstructionError(i, 1) // SystemError::ResultWithNegativeLamports
	}
	st.set(fromKey, bal-lamports)
	st.set(toKey, satAdd(st.get(toKey), lamports))
	return nil, cu, nil
}

// runMemo executes SPL Memo (v2 checks that every listed account signed; v1
// only validates UTF-8). Compute units approximate the real program's.
func runMemo(p *parsedTx, i int, ix solana.CompiledInstruction, v1 bool) ([]string, uint64, *txError) {
	d := []byte(ix.Data)
	var logs []string
	signers := uint64(0)
	missing := false
	if !v1 {
		for _, a := range ix.Accounts {
			if p.signer[a] {
				logs = append(logs, fmt.Sprintf("Program log: Signed by %s", p.keys[a]))
				signers++
			} else {
				missing = true
			}
		}
	}
	cu := 1_500 + 11_500*signers + 9*uint64(len(d))
	if missing {
		return logs, cu, instructionError(i, "MissingRequiredSignature")
	}
	if !utf8.Valid(d) {
		return append(logs, fmt.Sprintf("Program log: Invalid UTF-8, from byte %d", validUTF8Prefix(d))), cu,
			instructionError(i, "InvalidInstructionData")
	}
	if v1 {
		return append(logs, "Program log: "+string(d)), cu, nil
	}
	return append(logs, fmt.Sprintf("Program log: Memo (len %d): %s", len(d), rustDebugString(string(d)))), cu, nil
}

func validUTF8Prefix(b []byte) int {
	n := 0
	for n < len(b) {
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		n += size
	}
	return n
}

// rustDebugString formats s like Rust's `{:?}` for &str.
func rustDebugString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case 0:
			sb.WriteString(`\0`)
		default:
			if unicode.IsPrint(r) || r == ' ' {
				sb.WriteRune(r)
			} else {
				fmt.Fprintf(&sb, `\u{%x}`, r)
			}
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// memoText extracts the memos of a transaction the way getSignaturesForAddress
// reports them: "[len] text" joined by "; ".
func memoText(p *parsedTx) *string {
	var memos []string
	for _, ix := range p.tx.Message.Instructions {
		prog := p.keys[ix.ProgramIDIndex]
		if prog != solana.MemoProgramID && prog != memoV1ProgramID {
			continue
		}
		d := []byte(ix.Data)
		text := "(unparseable)"
		if utf8.Valid(d) {
			text = string(d)
		}
		memos = append(memos, fmt.Sprintf("[%d] %s", len(d), text))
	}
	if len(memos) == 0 {
		return nil
	}
	s := strings.Join(memos, "; ")
	return &s
}
