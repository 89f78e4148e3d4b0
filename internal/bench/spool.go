package bench

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// spool keeps a closed loop's request records in an unlinked temporary file
// while the load runs. They are the bench's own bookkeeping, a record per
// evidence, and the bench's process also runs keeper: in its heap, a batched
// phase's half a million records (about 30 MiB live, and with GOGC=400 up
// to five times that in heap) counted as keeper's memory growing over the
// phase. They are read back once the load has stopped.
type spool struct {
	mu  sync.Mutex
	f   *os.File
	n   int
	err error
}

// spoolFlush is how many records a client keeps before writing them out:
// few, because at a steady low rate a client fills its buffer over minutes,
// and 32 clients' buffers of 4,096 records were 10.7 MiB of the live heap's
// growth over a ten-minute run at 300 evidence/s.
const spoolFlush = 256

// recordSize is a request's encoding in the spool: due (8 bytes), latency
// (8), id (12), status (2), hasID (1), padding (1).
const recordSize = 32

// newSpool opens a spool, or returns nil when no temporary file can be
// made: the records then stay in memory, as before.
func newSpool() *spool {
	f, err := os.CreateTemp("", "keeper-bench-requests-")
	if err != nil {
		return nil
	}
	os.Remove(f.Name()) // the open file stays; nothing is left behind
	return &spool{f: f}
}

// write appends rs to the spool.
func (s *spool) write(rs []request) {
	buf := make([]byte, len(rs)*recordSize)
	for i, r := range rs {
		b := buf[i*recordSize:]
		binary.LittleEndian.PutUint64(b, uint64(r.due))
		binary.LittleEndian.PutUint64(b[8:], uint64(r.latency))
		copy(b[16:28], r.id[:])
		binary.LittleEndian.PutUint16(b[28:], uint16(r.status))
		if r.hasID {
			b[30] = 1
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if _, err := s.f.Write(buf); err != nil {
		s.err = err
		return
	}
	s.n += len(rs)
}

// readAll reads every record back and closes the spool.
func (s *spool) readAll() ([]request, error) {
	defer s.f.Close()
	if s.err != nil {
		return nil, fmt.Errorf("bench: spool the load's requests: %w", s.err)
	}
	buf := make([]byte, s.n*recordSize)
	if _, err := s.f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("bench: read the load's requests back: %w", err)
	}
	out := make([]request, s.n)
	for i := range out {
		b := buf[i*recordSize:]
		r := &out[i]
		r.due = int64(binary.LittleEndian.Uint64(b))
		r.latency = time.Duration(binary.LittleEndian.Uint64(b[8:]))
		copy(r.id[:], b[16:28])
		r.status = int16(binary.LittleEndian.Uint16(b[28:]))
		r.hasID = b[30] == 1
	}
	return out, nil
}
