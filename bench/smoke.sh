#!/usr/bin/env bash
# bench/smoke.sh: checks that the benchmark harness works, in about 20
# seconds. CI runs it (.ci/run, step "bench"). It builds everything and runs
# every load generator mode once, briefly, against mcpd and the bare-SDK
# baseline; it fails if anything does not build, a server does not start,
# or any request fails. It asserts no timings: a CI machine's figures mean
# nothing. The measurements are bench/run.sh's (docs/performance.md).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mcpd-bench-smoke.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
BIN=$WORK/bin
export MCPD_BENCH_DB=$WORK/sqlite-point.db

go build -o "$BIN/" ./cmd/mcpd ./bench/loadgen ./bench/baseline ./bench/loadtime ./bench/profserve ./bench/revproxy
"$BIN/loadgen" -gen-tools 1000 >"$WORK/tools-1000.hcl"

# Pin when the machine allows it, as bench/run.sh does.
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN=(-cpu 0); fi
LG=("$BIN/loadgen" "${PIN[@]}" -d 500ms -warmup 100ms)
STATIC=bench/configs/static.hcl
MCPD="$BIN/mcpd serve -c $STATIC --http {addr} --no-watch --log-level warn"
BASE="$BIN/baseline --http {addr}"

step() {
  echo "--- $*"
  "$@"
}

step "${LG[@]}" -mode call -transport http -c 4 -pairs 1 -a "$BASE" -b "$MCPD"
step "${LG[@]}" -mode call -transport http -c 4 -slices 3 -slice 200ms -a "$BASE" -b "$MCPD"
step "${LG[@]}" -mode call -transport http -c 4 -client std -server "$MCPD --json-response"
step "${LG[@]}" -mode call -transport http-modern -c 4 -pairs 1 -a "$BASE" -b "$MCPD"
step "${LG[@]}" -mode call -transport http -c 2 -tool echo -args '{"text":"hi"}' -server "$MCPD"
step "${LG[@]}" -mode call -transport stdio -c 2 -slices 2 -slice 200ms -a "$BIN/baseline --stdio" \
  -b "$BIN/mcpd serve -c $STATIC --stdio --no-watch --log-level warn"
step "${LG[@]}" -mode call -transport http -c 2 -tool get_item -args '{"id":{seq}}' -slices 2 -slice 200ms \
  -a "$BASE --sqlite $MCPD_BENCH_DB --seed bench/configs/sqlite-point.sql" \
  -b "$BIN/mcpd serve -c bench/configs/sqlite-point.hcl --http {addr} --no-watch --log-level warn"
step "${LG[@]}" -mode call -transport http-modern -c 2 -tool get_item -args '{"id":{seq}}' -pairs 1 \
  -a "$BIN/baseline --http {addr} --typed --sqlite $MCPD_BENCH_DB" \
  -b "$BIN/mcpd serve -c bench/configs/sqlite-point.hcl --http {addr} --no-watch --log-level warn"
# The stateless fast path against the SDK's handling of the same requests:
# CI's proxy for issue #21's ratios (printed, not asserted).
step "${LG[@]}" -mode call -transport http-modern -c 4 -tool get_item -args '{"id":{seq}}' -pairs 1 \
  -label-a sdk-path -label-b fast-path \
  -a "$BIN/mcpd serve -c bench/configs/sqlite-point.hcl --http {addr} --no-watch --log-level warn --no-fast-path" \
  -b "$BIN/mcpd serve -c bench/configs/sqlite-point.hcl --http {addr} --no-watch --log-level warn"
# The fast path of 2025-11-25 sessions against the SDK's (issue #34), and
# the 20-row query it is measured on.
step "${LG[@]}" -mode call -transport http -c 4 -tool list_items -args '{"after":{seq}}' -seq-max 9980 -pairs 1 \
  -label-a sdk-path -label-b fast-path \
  -a "$BIN/mcpd serve -c bench/configs/sqlite-rows.hcl --http {addr} --no-watch --log-level warn --no-legacy-fast-path" \
  -b "$BIN/mcpd serve -c bench/configs/sqlite-rows.hcl --http {addr} --no-watch --log-level warn"
step "${LG[@]}" -mode call -transport http-modern -c 2 -tree -pairs 1 -label-a revproxy -label-b gateway \
  -a "bench/proxy-pair.sh $BIN/mcpd $BIN/revproxy {addr}" -b "bench/gateway-pair.sh $BIN/mcpd {addr}"
step "${LG[@]}" -mode call -transport http -c 2 -tree -server "env MCPD_BENCH_FAST_PATH=false bench/gateway-pair.sh $BIN/mcpd {addr}"
step "${LG[@]}" -mode setup -transport http -c 1 -pairs 1 -a "$BASE" -b "$MCPD"
step "${LG[@]}" -mode list -transport http -c 1 -server "$BIN/mcpd serve -c $WORK/tools-1000.hcl --http {addr} --no-watch --log-level warn"
step "${LG[@]}" -mode startup -transport stdio -n 2 -server "$BIN/mcpd serve -c $STATIC --stdio --log-level warn"
step "${LG[@]}" -mode startup -transport http -n 2 -server "$MCPD"
step "${LG[@]}" -mode reload -transport http -n 2 -config-template bench/configs/reload.hcl \
  -server "$BIN/mcpd serve -c {config} --http {addr} --log-level warn"
step "$BIN/loadtime" -c "$WORK/tools-1000.hcl" -n 1
step "${LG[@]}" -mode call -transport http -c 2 \
  -server "$BIN/profserve -c $STATIC --http {addr} -cpuprofile $WORK/cpu.pprof -allocprofile $WORK/allocs.pprof"
test -s "$WORK/cpu.pprof" && test -s "$WORK/allocs.pprof"
echo "--- go test micro-benchmarks, once each"
go test -run '^$' -bench 'Validate|DecodeJSON|CallContext|EvalTemplate|BenchmarkRun|BenchmarkCall|BenchmarkDecode$|SQLitePointQuery|RowText' \
  -benchtime 1x ./engine/schema ./engine/adapter ./engine/shape ./engine/snapshot ./engine/config ./adapters/sqladapter >/dev/null
echo "bench smoke: ok"
