package receipt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheLocalEVMNetworkIsTheLocalChainIDsCAIP2Id(t *testing.T) {
	assert.Equal(t, LocalEVMNetwork, EVMNetwork(LocalEVMChainID))
	assert.Equal(t, "kee", string([]byte{LocalEVMChainID >> 16, LocalEVMChainID >> 8 & 0xff, LocalEVMChainID & 0xff}))
}
