#!/bin/sh
# Second part of the run: the SQL model with integrations (and signed checkpoints) at least 100 ms apart.
set -e
cd "$(dirname "$0")"
out=${1:-results}
for b in sqlite pg; do
  nice -n 10 ./bench2 -backend $b -integrate-every 100ms -n 200000 -rate-n 60000 > "$out/$b-every100ms.json" 2> "$out/$b-every100ms.log"
done
