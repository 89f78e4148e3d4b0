#!/bin/sh
# One run, same machine: every backend in turn, 200,000 entries flat out then 60,000 at 1,000/s.
set -e
cd "$(dirname "$0")"
out=${1:-results}
mkdir -p "$out"
uptime > "$out/uptime-before.txt"
for b in sqlite pg posix mysql; do
  nice -n 10 ./bench -backend $b -n 200000 -rate-n 60000 > "$out/$b.json" 2> "$out/$b.log"
done
nice -n 10 ./bench -backend posix -checkpoint-interval 100ms -n 200000 -rate-n 60000 > "$out/posix-cp100ms.json" 2> "$out/posix-cp100ms.log"
uptime > "$out/uptime-after.txt"
