package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/evlog"
)

func TestThePartialTilesAreTheRightEdgeAtBothLevels(t *testing.T) {
	assert.Equal(t, []evlog.Tile{{Level: 0, N: 70, Width: 16}, {Level: 1, N: 0, Width: 70}}, partialTiles(70*256+16))
	assert.Equal(t, []evlog.Tile{{Level: 1, N: 0, Width: 64}}, partialTiles(64*256), "a log of whole tiles has no partial level-0 tile")
	assert.Empty(t, partialTiles(256*256), "nor a level-1 tile when its level-0 tiles fill it")
}
