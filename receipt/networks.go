package receipt

// LocalEVMChainID is the chain id of keeper dev's local EVM chain
// (internal/dev/devchain), 0x6b6565, "kee" in ASCII. It is not a public
// network: a receipt anchored on it verifies only against that local node.
// keeper dev ran its chain with EtherLink mainnet's id (42793) before, so a
// transaction signed on it was valid on mainnet for the same key; see
// docs/chains.md, keeper dev's local chains.
const LocalEVMChainID = 7038309

// LocalEVMNetwork is the CAIP-2 id of keeper dev's local EVM chain, the
// network of its anchors: EVMNetwork(LocalEVMChainID).
const LocalEVMNetwork = "eip155:7038309"
