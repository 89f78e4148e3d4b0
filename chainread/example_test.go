package chainread_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keeperhq/keeper/chainread"
)

// solanaAnswers are a Solana mainnet node's answers about one anchor
// transaction, as recorded in the conformance vector v3-solana.
var solanaAnswers = map[string]string{
	"getGenesisHash": `"5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"`,
	"getTransaction": `{
		"blockTime": 1770802200,
		"meta": {
			"computeUnitsConsumed": 14000,
			"err": null,
			"fee": 5000,
			"innerInstructions": [],
			"loadedAddresses": {
				"readonly": [],
				"writable": []
			},
			"logMessages": [
				"Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr invoke [1]",
				"Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr success"
			],
			"postBalances": [
				1999995000,
				521498880
			],
			"postTokenBalances": [],
			"preBalances": [
				2000000000,
				521498880
			],
			"preTokenBalances": [],
			"rewards": [],
			"status": {
				"Ok": null
			}
		},
		"slot": 395637500,
		"transaction": [
			"AY0QK0AmnY9KPEvdIYW1gVIEYaT+ziStvgJAU18eDZamHMp0dN/5SejLHVb7qn4X+XMJg/bLpEhE+iy82DwdQwoBAAECpp2nr6tAKftmqHkc9doY1kt+LhziKmTTZEU4zHXw+sYFSlNamSkhBk0k6HFg2jh8fDW13bySu4HkH6hAQQVEjRiR2cYVe7WxVg2EIkZwF2XEvAnh0SamEjVeitb4kw75AQEBAFhrZWVwZXI6djM6ZTQ0YWY2ZTU6ODpjZTA3OGNkZDEwOGRkODE2YTA1ZWUyM2MxMjdhMzUwYjkzZDMzZmJmZWIwY2QxYTUyYjZiYzVkMzI2NTgyOGI5OjQy",
			"base64"
		],
		"version": "legacy"
	}`,
	"getBlock": `{
		"blockHeight": 379637500,
		"blockTime": 1770802200,
		"blockhash": "343YqP6WvJSJoG8TFRP4cjXhcf1E7TLQcD89NJK72wW4",
		"parentSlot": 395637499,
		"previousBlockhash": "49WoVBv3Xrh7SUC11SDHJzSMMKRTMuGohFJC1ATjDvZu",
		"signatures": [
			"5H6DDgM1qaDJncFjozcATejC4i65NthpgWvWr63bmaAYto4GRoU7LjM5FikFCrPa74k5ufnsWh65r6CrYqbELKid",
			"3paWEK3BMiThZutpA59o4YXXZd2wC4ttJe6LxFvuCgC6Po3CkUQMH68RyCVoXfzeCLS1Xb2G4oXQMN9mZr6rbfc5",
			"3JrKfSX9MfRhMpyg3iMT5Wp8UHnMtZKaSSNotPixS4icZNGJQYJw9NfW2AY2TvxMV7yTTmUMN3anjzkwbjqR9YCH"
		]
	}`,
}

// Read an anchor transaction from a Solana node and trust nothing the node
// says that the transaction's own bytes can show: its signatures are
// verified, its fee payer and memo are read from its wire bytes, and its
// block must list it. chainread.HTTP(url, nil) is the Caller of a real node;
// this one answers from recorded JSON.
func ExampleSolana() {
	node := chainread.CallerFunc(func(_ context.Context, method string, params ...any) (json.RawMessage, error) {
		a, ok := solanaAnswers[method]
		if !ok {
			return nil, &chainread.RPCError{Code: -32601, Message: "method not found"}
		}
		return json.RawMessage(a), nil
	})
	sig, err := chainread.SolanaSignature("3paWEK3BMiThZutpA59o4YXXZd2wC4ttJe6LxFvuCgC6Po3CkUQMH68RyCVoXfzeCLS1Xb2G4oXQMN9mZr6rbfc5")
	if err != nil {
		fmt.Println(err)
		return
	}
	tx, err := chainread.Solana(context.Background(), node, sig)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("network:", tx.Network)
	fmt.Println("found:", tx.Found, "succeeded:", tx.Succeeded, "final:", tx.Final)
	fmt.Println("sender:", tx.Sender)
	fmt.Println("slot:", tx.Block, "at", tx.BlockTime.UTC())
	for _, p := range tx.Payloads {
		fmt.Printf("memo: %s\n", p)
	}
	// Output:
	// network: solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp
	// found: true succeeded: true final: true
	// sender: CDQ7JmjBsyy7cmUWgjTxhasbmbi1PvyiaBhXYS3d5DFB
	// slot: 395637500 at 2026-02-11 09:30:00 +0000 UTC
	// memo: keeper:v3:e44af6e5:8:ce078cdd108dd816a05ee23c127a350b93d33fbfeb0cd1a52b6bc5d3265828b9:42
}

// An EtherLink node's answer to eth_getTransactionByHash for an anchor
// (conformance vector v3-etherlink).
const evmTxJSON = `{
	"accessList": [],
	"blockHash": "0x9a2a2143e0edb9cd668b10096c27aa7261f5070b43eb018394f18e07a7a986f5",
	"blockNumber": "0xd85540",
	"chainId": "0xa729",
	"from": "0x4c4936cebad6e1a7c5ccc7237bb55407cdd74d78",
	"gas": "0x186a0",
	"gasPrice": "0x77359400",
	"hash": "0x6d062f6bc1616645b4bcfc3b73566d92418c6dba00c04942433bb838fe6d6e21",
	"input": "0x6b65657065723a76333ae44af6e500000000000000052a721046297f69c8f801d6f1686a81a6e56f3da930985daef2bf033a83667d3f",
	"maxFeePerGas": "0x174876e800",
	"maxPriorityFeePerGas": "0x3b9aca00",
	"nonce": "0x2",
	"r": "0x2b89267ea7213e660eb5f68fd454cd7aafae009c17cd74cd47a1834820d29728",
	"s": "0x4ec485d80ac409cf87cfece6337764d1d9ed38682fe897d387c5979e32bae893",
	"to": "0x4c4936cebad6e1a7c5ccc7237bb55407cdd74d78",
	"transactionIndex": "0x0",
	"type": "0x2",
	"v": "0x0",
	"value": "0x0",
	"yParity": "0x0"
}`

// Rebuild an EVM transaction from a node's JSON: it must hash to the hash
// asked for and be signed for the network's chain id, and its sender is
// recovered from its signature, not taken from the node's "from".
func ExampleDecodeEVMTransaction() {
	want, err := chainread.EVMHash("0x6d062f6bc1616645b4bcfc3b73566d92418c6dba00c04942433bb838fe6d6e21")
	if err != nil {
		fmt.Println(err)
		return
	}
	tx, err := chainread.DecodeEVMTransaction(json.RawMessage(evmTxJSON), want, 42793)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("type", tx.Type, "on", chainread.EVMNetwork(tx.ChainID), "nonce", tx.Nonce)
	fmt.Println("sender:", chainread.ChecksumAddress(tx.Sender))
	fmt.Printf("calldata: %q + %x\n", tx.Data[:10], tx.Data[10:]) // keeper:v3: ‖ key hash ‖ size ‖ root

	// The same answer asked for on another chain is refused.
	_, err = chainread.DecodeEVMTransaction(json.RawMessage(evmTxJSON), want, 1)
	fmt.Println("on chain 1:", err)
	// Output:
	// type 2 on eip155:42793 nonce 2
	// sender: 0x4c4936Cebad6e1A7c5cCc7237bB55407Cdd74d78
	// calldata: "keeper:v3:" + e44af6e500000000000000052a721046297f69c8f801d6f1686a81a6e56f3da930985daef2bf033a83667d3f
	// on chain 1: signed for chain id 42793, the network's is 1
}
