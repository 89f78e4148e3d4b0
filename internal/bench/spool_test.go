package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The records a closed loop spools while it runs come back as they were
// written, every field, in the order each client wrote them.
func TestSpooledRequestsComeBackAsTheyWereWritten(t *testing.T) {
	sp := newSpool()
	require.NotNil(t, sp)
	var want []request
	for i := range 2*spoolFlush + 3 {
		r := request{due: time.Now().UnixNano() + int64(i), latency: time.Duration(i) * time.Microsecond, status: int16(200 + i%300)}
		if i%3 == 0 {
			r.id = [12]byte{byte(i), byte(i >> 8), 0xff, 0, 1, 2, 3, 4, 5, 6, 7, byte(i >> 16)}
			r.hasID = true
		}
		want = append(want, r)
	}
	sp.write(want[:spoolFlush])
	sp.write(want[spoolFlush:])
	got, err := sp.readAll()
	require.NoError(t, err)
	require.Equal(t, want, got)
}
