package devnet

import (
	"maps"
	"time"
)

// RPCFault makes matching RPC calls fail.
type RPCFault struct {
	// Method is the JSON-RPC method to fail ("" fails every method).
	Method string
	// Count is how many matching calls fail. With Rate set, at most Count
	// calls fail (0: no limit). With neither set, every matching call fails
	// until ClearFaults.
	Count int
	// Rate, in (0, 1], fails that fraction of matching calls at random.
	Rate float64
	// HTTPStatus, if set, answers the whole HTTP request with this status
	// (e.g. 503, 429) and a plain-text body instead of a JSON-RPC response.
	HTTPStatus int
	// Code and Message form the JSON-RPC error when HTTPStatus is 0
	// (default -32603 "Internal error", unless Delay is set).
	Code    int
	Message string
	// Delay is added before the call is answered (whether or not it fails
	// otherwise; a fault with only Delay set slows calls down).
	Delay time.Duration
}

type faultState struct {
	RPCFault
	left int // remaining failures; -1 unlimited
}

// InjectFault adds an RPC fault. Faults are checked in the order added; the
// first that applies to a call is used.
func (d *Devnet) InjectFault(f RPCFault) {
	left := f.Count
	if left <= 0 {
		left = -1
	}
	if f.HTTPStatus == 0 && f.Code == 0 && f.Delay == 0 {
		f.Code, f.Message = codeInternalError, "Internal error"
	}
	d.fmu.Lock()
	d.faults = append(d.faults, &faultState{RPCFault: f, left: left})
	d.fmu.Unlock()
}

// FailRPC answers the next n calls of method ("" for any) with a JSON-RPC
// error (-32603 Internal error).
func (d *Devnet) FailRPC(method string, n int) {
	if n <= 0 {
		return
	}
	d.InjectFault(RPCFault{Method: method, Count: n})
}

// FailHTTP answers the next n HTTP requests carrying method ("" for any)
// with the HTTP status (e.g. http.StatusServiceUnavailable).
func (d *Devnet) FailHTTP(method string, n int, status int) {
	if n <= 0 {
		return
	}
	d.InjectFault(RPCFault{Method: method, Count: n, HTTPStatus: status})
}

// FailRPCRate answers a fraction (0..1] of the calls of method ("" for any)
// with a JSON-RPC error until ClearFaults.
func (d *Devnet) FailRPCRate(method string, rate float64) {
	d.InjectFault(RPCFault{Method: method, Rate: rate})
}

// ClearFaults removes every RPC fault.
func (d *Devnet) ClearFaults() {
	d.fmu.Lock()
	d.faults = nil
	d.fmu.Unlock()
}

// takeFault counts a call of method and returns the fault that applies to
// it, if any, consuming one of its failures.
func (d *Devnet) takeFault(method string) *RPCFault {
	d.fmu.Lock()
	defer d.fmu.Unlock()
	d.calls[method]++
	for i, f := range d.faults {
		if f.Method != "" && f.Method != method {
			continue
		}
		if f.Rate > 0 && d.rng.Float64() >= f.Rate {
			continue
		}
		out := f.RPCFault
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				d.faults = append(d.faults[:i:i], d.faults[i+1:]...)
			}
		}
		return &out
	}
	return nil
}

// Calls returns how many calls of method the devnet received (including
// calls answered with an injected fault; batch entries count one each).
func (d *Devnet) Calls(method string) int {
	d.fmu.Lock()
	defer d.fmu.Unlock()
	return d.calls[method]
}

// CallCounts returns a copy of the per-method call counters.
func (d *Devnet) CallCounts() map[string]int {
	d.fmu.Lock()
	defer d.fmu.Unlock()
	return maps.Clone(d.calls)
}

// ResetCalls zeroes the call counters.
func (d *Devnet) ResetCalls() {
	d.fmu.Lock()
	d.calls = map[string]int{}
	d.fmu.Unlock()
}
