#!/usr/bin/env bash
# Compiles Token.sol into Token.bin and Token.abi with solc-js pinned to the
# pragma's version. The tests use the committed outputs and never compile;
# run this only after changing Token.sol:
#
#   dev/testchain/testdata/compile.sh
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
npx --yes solc@0.8.28 --optimize --bin --abi -o "$out" Token.sol
cp "$out"/Token_sol_Token.bin Token.bin
cp "$out"/Token_sol_Token.abi Token.abi
echo >> Token.bin
echo >> Token.abi
