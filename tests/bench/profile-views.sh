#!/usr/bin/env bash
# Where the server's CPU goes in the live-ranks scenario, part by part: `perf record` on the
# server through one plain and one views run of `loadgen_views` (a fixed offered rate, 3 s of
# uncounted warm-up each), then the samples of each run's measured seconds sorted by the code
# they hit, in µs per submission, and the views run's extra per delivered `me` push.
#
# Whole-process CPU (what `cargo xtask bench -- --views` subtracts) spreads by a few µs per
# push from run to run on a shared machine; the hub's own samples are what a change to the
# hub moves.
#
# usage: [RATE=12000] tests/bench/profile-views.sh PLAYERS [LOADGEN_VIEWS] [OUT_DIR]
# Needs perf (`apt-get install linux-perf`) and a build with line tables:
#   CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p scorecast-tests --bin loadgen_views
set -euo pipefail
players=${1:?usage: $0 PLAYERS [LOADGEN_VIEWS] [OUT_DIR]}
bin=${2:-target/release/loadgen_views}
out=${3:-$(mktemp -d)}
freq=2999
rate=${RATE:-12000}
warmup=3
seconds=8
# The window read from each run: inside its measured seconds, clear of their edges.
from=$((warmup)).5
span=7
mkdir -p "$out"
stamp() { while IFS= read -r line; do echo "$(cut -d' ' -f1 /proc/uptime) $line"; done; }
("$bin" --players "$players" --rate "$rate" --rounds 1 --views-first --warmup $warmup \
    --seconds $seconds 2>&1 >"$out/loadgen.txt" | stamp >"$out/stages.txt") &
loadgen=$!
pid=
while [ -z "$pid" ]; do
    sleep 0.05
    pid=$(pgrep -f -- " --serve " | head -1 || true)
done
perf record -k CLOCK_MONOTONIC -F $freq -p "$pid" -o "$out/perf.data" 2>"$out/perf.log" >/dev/null &
wait $loadgen
wait || true

# Samples of one run's window, by part.
parts() {
    local t a b
    t=$(grep "$1: " "$out/stages.txt" | cut -d' ' -f1)
    a=$(echo "$t + $from" | bc)
    b=$(echo "$t + $from + $span" | bc)
    perf script -i "$out/perf.data" --time "$a,$b" -F ip,sym,dso 2>/dev/null | awk '
        NF == 0 { next }
        /kernel.kallsyms/ { n["kernel"]++; next }
        /scorecast_server::hub::/ { n["hub"]++; next }
        /scorecast_server::ws::/ { n["sessions"]++; next }
        /scorecast_server::store::|redis::/ { n["store"]++; next }
        /actix/ { n["actix"]++; next }
        /tokio/ { n["tokio"]++; next }
        /rjem|malloc|alloc::|free/ { n["alloc"]++; next }
        /serde/ { n["serde"]++; next }
        { n["other"]++ }
        END { for (k in n) print k, n[k] }'
}
# Submissions/s of a run (the first number of its row in the load generator's table).
rate() { awk -v r="$1" '$1 == r { print $2; exit }' "$out/loadgen.txt"; }
pushes() { awk '$1 == "views" { print $9; exit }' "$out/loadgen.txt"; }
parts plain >"$out/plain.txt"
parts views >"$out/views.txt"
echo "$players players, $span s of each run at $freq Hz (perf data and load generator output: $out)"
printf '%-9s %18s %18s %24s\n' part "plain µs/sub" "views µs/sub" "views extra µs/push"
for part in hub sessions store actix tokio alloc serde kernel other total; do
    p=$(awk -v k=$part '$1 == k || k == "total" { s += $2 } END { print s + 0 }' "$out/plain.txt")
    v=$(awk -v k=$part '$1 == k || k == "total" { s += $2 } END { print s + 0 }' "$out/views.txt")
    awk -v part=$part -v p="$p" -v v="$v" -v rp="$(rate plain)" -v rv="$(rate views)" \
        -v push="$(pushes)" -v f=$freq -v s=$span 'BEGIN {
        us = 1e6 / f
        printf "%-9s %18.2f %18.2f %24.2f\n", part, p * us / (rp * s), v * us / (rv * s),
            (v * us / (rv * s) - p * us / (rp * s)) * rv / push
    }'
done
