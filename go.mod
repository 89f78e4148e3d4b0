module github.com/keeperhq/keeper

go 1.26.8

require (
	github.com/ethereum/go-ethereum v1.17.10
	github.com/gagliardetto/solana-go v1.14.0
	github.com/temporalio/ui-server/v2 v2.55.0
	go.temporal.io/sdk v1.50.0
	go.temporal.io/sdk/contrib/envconfig v1.0.2
	go.temporal.io/server v1.32.1
)
