#!/usr/bin/env bash
# bench/run.sh: mcpd's benchmark harness in one command (see docs/performance.md).
#
#   bash bench/run.sh          the full run behind docs/performance.md (about 30 minutes)
#   bash bench/run.sh quick    the same scenarios, fewer and shorter runs (about 10 minutes)
#
# It builds mcpd, the bare-SDK baseline (bench/baseline), the load generator
# (bench/loadgen) and the config-load timer (bench/loadtime), then measures
# every scenario docs/performance.md reports: mcpd against the baseline,
# interleaved (A B, B A, ...: in one-second slices for calls and lists, in
# whole runs for session setup and startup) with the servers pinned to one
# CPU and the load generator to another, stdio, session setup, tools/list at 1,000 tools,
# startup, reload latency, config loading, the SQLite point query (against
# the baseline's SQLite mode, legacy and stateless), the GC policy, the go test
# micro-benchmarks and CPU profiles. Everything lands in one directory:
#
#   report.md      every command and its output, with the date, commit and machine
#   results.jsonl  one JSON line per server run
#   *.pprof        CPU profiles of mcpd and of the baseline under load
#
# Settings (environment): OUT (results directory; default
# bench/results/DATE-COMMIT), SLICES (pairs of one-second slices per
# comparison), PAIRS (pairs of whole runs), DURATION (of a single run),
# WARMUP, N (repetitions of startup and reload), SERVER_CPU (0), CLIENT_CPU (1),
# ONLY (an extended regular expression: run only the sections whose title
# matches, e.g. ONLY=SQLite). Needs Go and taskset (util-linux, installed with apt-get
# when missing and run as root); on a machine with one CPU nothing is pinned.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
MODE=${1:-full}
case "$MODE" in
full) SLICES=${SLICES:-30} PAIRS=${PAIRS:-5} DURATION=${DURATION:-10s} WARMUP=${WARMUP:-2s} N=${N:-20} ;;
quick) SLICES=${SLICES:-10} PAIRS=${PAIRS:-3} DURATION=${DURATION:-5s} WARMUP=${WARMUP:-1s} N=${N:-10} ;;
*)
  echo "usage: bench/run.sh [full|quick]" >&2
  exit 2
  ;;
esac
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null | grep -v '^??' || true)" ]; then COMMIT="$COMMIT+dirty"; fi
OUT=${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-$COMMIT}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$OUT/bin
REPORT=$OUT/report.md

# --- tools -----------------------------------------------------------------------

if ! command -v taskset >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing util-linux (taskset)"
    apt-get update -qq && apt-get install -y -qq util-linux >/dev/null
  fi
fi
PIN_SERVER=(-cpu "$SERVER_CPU")
PIN_CLIENT=(taskset -c "$CLIENT_CPU")
if ! command -v taskset >/dev/null || [ "$(nproc)" -lt 2 ]; then
  echo "warning: taskset or a second CPU is missing: server and load generator are not pinned" >&2
  PIN_SERVER=()
  PIN_CLIENT=()
fi

echo "building into $BIN"
go build -o "$BIN/" ./cmd/mcpd ./bench/loadgen ./bench/baseline ./bench/loadtime ./bench/profserve ./bench/revproxy
"$BIN/loadgen" -gen-tools 1000 >"$OUT/tools-1000.hcl"
"$BIN/loadgen" -gen-tools 10000 >"$OUT/tools-10000.hcl"

# mcpd's GC policy when GOGC and GOMEMLIMIT are unset (cmd/mcpd/gc.go); the
# baseline runs with the same settings so that pairs compare like with like.
GC=(GOGC=400 GOMEMLIMIT=512MiB)
STATIC=bench/configs/static.hcl
MCPD="$BIN/mcpd serve -c $STATIC --http {addr} --ui=false --no-watch --log-level warn"
MCPD_STDIO="$BIN/mcpd serve -c $STATIC --stdio --no-watch --log-level warn"
BASE="env ${GC[*]} $BIN/baseline --http {addr}"
BASE_STDIO="env ${GC[*]} $BIN/baseline --stdio"
export MCPD_BENCH_DB="$OUT/sqlite-point.db"

LG=("${PIN_CLIENT[@]}" "$BIN/loadgen" "${PIN_SERVER[@]}" -json "$OUT/results.jsonl")
CALL=(-warmup "$WARMUP" -slices "$SLICES" -slice 1s)
RUNS=(-d "$DURATION" -warmup "$WARMUP" -pairs "$PAIRS")

# --- report ----------------------------------------------------------------------------

{
  echo "# mcpd benchmark run ($MODE)"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: $COMMIT"
  echo "- go: $(go version)"
  echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
  echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- pinning: server on CPU ${PIN_SERVER[1]:-none}, load generator on CPU ${PIN_CLIENT[2]:-none}"
  echo "- comparisons: $SLICES pairs of 1 s slices (calls, lists); $PAIRS pairs of runs measured $DURATION after $WARMUP of warmup (session setup), $N starts per startup run"
  echo "- baseline and GC: the baseline runs with ${GC[*]}, mcpd's default policy"
  if [ -n "${ONLY:-}" ]; then echo "- only the sections matching: $ONLY"; fi
  echo
} >"$REPORT"

# section TITLE CMD...: runs CMD, appending the command and its output to
# the report.
section() {
  local title=$1
  shift
  if [ -n "${ONLY:-}" ] && ! grep -Eq -- "$ONLY" <<<"$title"; then
    return 0
  fi
  echo
  echo "=== $title"
  {
    echo "## $title"
    echo
    echo '```'
    echo "\$ ${*#"$BIN/"}"
  } >>"$REPORT"
  "$@" 2>&1 | tee -a "$REPORT"
  echo '```' >>"$REPORT"
  echo >>"$REPORT"
}

# --- HTTP: mcpd against the bare SDK -----------------------------------------------------

section "Static tool, HTTP, legacy sessions, C=16 (SSE responses)" \
  "${LG[@]}" -mode call -transport http -c 16 "${CALL[@]}" -label-a sdk -label-b mcpd -a "$BASE" -b "$MCPD"

section "Static tool, HTTP, legacy sessions, C=16, JSON responses on both" \
  "${LG[@]}" -mode call -transport http -c 16 "${CALL[@]}" -label-a sdk-json -label-b mcpd-json \
  -a "$BASE --json-response" -b "$MCPD --json-response"

section "Static tool, HTTP, stateless 2026-07-28 requests, C=16" \
  "${LG[@]}" -mode call -transport http-modern -c 16 "${CALL[@]}" -label-a sdk -label-b mcpd -a "$BASE" -b "$MCPD"

section "Echo tool (argument into an HCL template), HTTP, legacy sessions, C=16" \
  "${LG[@]}" -mode call -transport http -c 16 -tool echo -args '{"text":"hello"}' "${CALL[@]}" \
  -label-a sdk -label-b mcpd -a "$BASE" -b "$MCPD"

section "Static tool, HTTP, legacy, C=16, both at the runtime's GC defaults (GOGC=100)" \
  "${LG[@]}" -mode call -transport http -c 16 "${CALL[@]}" -label-a sdk-gc100 -label-b mcpd-gc100 \
  -a "env GOGC=100 $BIN/baseline --http {addr}" -b "env GOGC=100 $MCPD"

section "GC policy: mcpd at GOGC=100 against mcpd's default (GOGC=400, GOMEMLIMIT=512MiB)" \
  "${LG[@]}" -mode call -transport http -c 16 "${CALL[@]}" -label-a gogc100 -label-b default \
  -a "env GOGC=100 $MCPD" -b "$MCPD"

if [ "$MODE" = full ]; then
  for g in 200 800; do
    section "GC policy: mcpd's default against GOGC=$g (GOMEMLIMIT=512MiB)" \
      "${LG[@]}" -mode call -transport http -c 16 "${CALL[@]}" -label-a default -label-b "gogc$g" \
      -a "$MCPD" -b "env GOGC=$g GOMEMLIMIT=512MiB $MCPD"
  done
fi

# The SQLite point query: mcpd against the bare-SDK server of the same tool
# (bench/baseline --sqlite: database/sql, one connection, the rows' JSON as
# text), on the same database file, seeded by whichever starts first.
SQLITE_MCPD="$BIN/mcpd serve -c bench/configs/sqlite-point.hcl --http {addr} --ui=false --no-watch --log-level warn"
SQLITE_BASE="$BASE --sqlite $MCPD_BENCH_DB --seed bench/configs/sqlite-point.sql"
SQLITE_CALL=(-tool get_item -args '{"id":{seq}}' -seq-max 10000)

section "SQLite point query (SELECT ... WHERE id = :id on 10,000 rows, a different id each call), HTTP, legacy, C=16" \
  "${LG[@]}" -mode call -transport http -c 16 "${SQLITE_CALL[@]}" "${CALL[@]}" -label-a sdk-sqlite -label-b mcpd-sqlite \
  -a "$SQLITE_BASE" -b "$SQLITE_MCPD"

section "SQLite point query, HTTP, stateless 2026-07-28 requests, C=16" \
  "${LG[@]}" -mode call -transport http-modern -c 16 "${SQLITE_CALL[@]}" "${CALL[@]}" -label-a sdk-sqlite -label-b mcpd-sqlite \
  -a "$SQLITE_BASE" -b "$SQLITE_MCPD"

# The stateless fast path (engine/serve/fastpath.go) against the SDK's own
# stateless handling of the same requests (--no-fast-path): issue #21's
# goals are these ratios (point query >= 1.75x, and the static tool's
# against the bare SDK above >= 2x).
section "Stateless fast path: SQLite point query, --no-fast-path (A) against the fast path (B), C=16" \
  "${LG[@]}" -mode call -transport http-modern -c 16 "${SQLITE_CALL[@]}" "${CALL[@]}" -label-a sdk-path -label-b fast-path \
  -a "$SQLITE_MCPD --no-fast-path" -b "$SQLITE_MCPD"

section "Stateless fast path: static tool, --no-fast-path (A) against the fast path (B), C=16" \
  "${LG[@]}" -mode call -transport http-modern -c 16 "${CALL[@]}" -label-a sdk-path -label-b fast-path \
  -a "$MCPD --no-fast-path" -b "$MCPD"

# The fast path of 2025-11-25 sessions (engine/serve/fastlegacy.go) against
# the SDK's handling of the same sessions (--no-legacy-fast-path): issue
# #34's goals are the point query >= 1.55x and 20 rows >= 1.4x today's
# legacy mcpd, p99 not worse.
SQLITE_ROWS_MCPD="$BIN/mcpd serve -c bench/configs/sqlite-rows.hcl --http {addr} --ui=false --no-watch --log-level warn"
section "Legacy fast path: SQLite point query, --no-legacy-fast-path (A) against the fast path (B), HTTP, legacy, C=16" \
  "${LG[@]}" -mode call -transport http -c 16 "${SQLITE_CALL[@]}" "${CALL[@]}" -label-a sdk-path -label-b fast-path \
  -a "$SQLITE_MCPD --no-legacy-fast-path" -b "$SQLITE_MCPD"

section "Legacy fast path: SQLite 20 rows, --no-legacy-fast-path (A) against the fast path (B), HTTP, legacy, C=16" \
  "${LG[@]}" -mode call -transport http -c 16 -tool list_items -args '{"after":{seq}}' -seq-max 9980 "${CALL[@]}" -label-a sdk-path -label-b fast-path \
  -a "$SQLITE_ROWS_MCPD --no-legacy-fast-path" -b "$SQLITE_ROWS_MCPD"

section "Legacy fast path: static tool, --no-legacy-fast-path (A) against the fast path (B), HTTP, legacy, C=16" \
  "${LG[@]}" -mode call -transport http -c 16 "${CALL[@]}" -label-a sdk-path -label-b fast-path \
  -a "$MCPD --no-legacy-fast-path" -b "$MCPD"

# The gateway (issue #34): the same mcpd upstream behind Go's
# httputil.ReverseProxy (bench/revproxy) or behind an mcpd gateway, the CPU
# of both processes of each pair counted (-tree); and the gateway's calls
# through the go-sdk client against its fast path.
PROXY_PAIR="bench/proxy-pair.sh $BIN/mcpd $BIN/revproxy {addr}"
GATEWAY_PAIR="bench/gateway-pair.sh $BIN/mcpd {addr}"
for transport in http http-modern; do
  section "Gateway: a ReverseProxy hop (A) against the gateway (B) in front of the same upstream, $transport, C=16" \
    "${LG[@]}" -mode call -transport "$transport" -c 16 -tree "${CALL[@]}" -label-a revproxy -label-b gateway \
    -a "$PROXY_PAIR" -b "$GATEWAY_PAIR"
  section "Gateway: calls through the go-sdk client (A) against the gateway's fast path (B), $transport, C=16" \
    "${LG[@]}" -mode call -transport "$transport" -c 16 -tree "${CALL[@]}" -label-a sdk-client -label-b fast-path \
    -a "env MCPD_BENCH_FAST_PATH=false $GATEWAY_PAIR" -b "$GATEWAY_PAIR"
done

# The result cache: the same SQLite point query uncached against answered
# from the cache (in memory, then on Redis), over 200 ids that the warmup
# caches. Redis: $MCPD_BENCH_REDIS (default redis://127.0.0.1:6379); the
# Redis section is left out when none answers.
CACHED_MCPD="$BIN/mcpd serve -c bench/configs/sqlite-point-cached.hcl --http {addr} --ui=false --no-watch --log-level warn"
REDIS_MCPD="env MCPD_BENCH_REDIS_PREFIX=mcpd-bench-$$ $BIN/mcpd serve -c bench/configs/sqlite-point-redis.hcl --http {addr} --ui=false --no-watch --log-level warn"
CACHE_CALL=(-tool get_item -args '{"id":{seq}}' -seq-max 200)

section "Result cache: SQLite point query uncached against a cache hit in memory, HTTP, legacy, C=16" \
  "${LG[@]}" -mode call -transport http -c 16 "${CACHE_CALL[@]}" "${CALL[@]}" -label-a uncached -label-b mem-hit \
  -a "$SQLITE_MCPD" -b "$CACHED_MCPD"

section "Result cache: SQLite point query uncached against a cache hit in memory, HTTP, stateless, C=16" \
  "${LG[@]}" -mode call -transport http-modern -c 16 "${CACHE_CALL[@]}" "${CALL[@]}" -label-a uncached -label-b mem-hit \
  -a "$SQLITE_MCPD" -b "$CACHED_MCPD"

redis_url=${MCPD_BENCH_REDIS:-redis://127.0.0.1:6379}
redis_hostport=${redis_url#redis://}
if command -v redis-cli >/dev/null && redis-cli -h "${redis_hostport%%:*}" -p "${redis_hostport##*:}" ping >/dev/null 2>&1; then
  section "Result cache: SQLite point query uncached against a cache hit on Redis, HTTP, legacy, C=16" \
    "${LG[@]}" -mode call -transport http -c 16 "${CACHE_CALL[@]}" "${CALL[@]}" -label-a uncached -label-b redis-hit \
    -a "$SQLITE_MCPD" -b "$REDIS_MCPD"
  section "Result cache: a cache hit in memory against one on Redis, HTTP, legacy, C=16" \
    "${LG[@]}" -mode call -transport http -c 16 "${CACHE_CALL[@]}" "${CALL[@]}" -label-a mem-hit -label-b redis-hit \
    -a "$CACHED_MCPD" -b "$REDIS_MCPD"
else
  echo "no Redis at $redis_url: the Redis result cache sections are left out" | tee -a "$REPORT"
fi

# --- shared state: rate limits in memory against Redis ------------------------------------

# A rate-limited call whose limits are checked in this process against the
# same call checked in Redis (the state block: one EVALSHA per batch of
# concurrent calls, or none while the replica holds reserved tokens), and
# an unlimited call against the in-memory limit. The Redis is a private
# redis-server on a free port, pinned beside the load generator, so that
# it takes no CPU from the server; "CPU s" is mcpd's own CPU (not Redis's).
if command -v redis-server >/dev/null; then
  REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 6390)
  "${PIN_CLIENT[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning &
  REDIS_PID=$!
  trap 'kill $REDIS_PID 2>/dev/null || true' EXIT
  export MCPD_BENCH_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  RL="$BIN/mcpd serve --http {addr} --ui=false --no-watch --log-level warn -c bench/configs/ratelimit"
  section "Rate-limited call: no limit (A) against limits in memory (B), HTTP, stateless, C=16" \
    "${LG[@]}" -mode call -transport http-modern -c 16 -tool work "${CALL[@]}" -label-a unlimited -label-b memory \
    -a "$RL-none.hcl" -b "$RL-memory.hcl"
  section "Rate-limited call: limits in memory (A) against limits in Redis (B), HTTP, stateless, C=16" \
    "${LG[@]}" -mode call -transport http-modern -c 16 -tool work "${CALL[@]}" -label-a memory -label-b redis \
    -a "$RL-memory.hcl" -b "$RL-redis.hcl"
  section "Rate-limited call: limits in memory (A) against limits in Redis with local_reserve = 0 (B: every call decided in Redis), HTTP, stateless, C=16" \
    "${LG[@]}" -mode call -transport http-modern -c 16 -tool work "${CALL[@]}" -label-a memory -label-b redis-exact \
    -a "$RL-memory.hcl" -b "$RL-redis-exact.hcl"
  kill "$REDIS_PID" 2>/dev/null || true
else
  echo "redis-server is not installed: the shared-state sections are skipped" >&2
fi

# --- stdio, sessions, lists --------------------------------------------------------------

section "Static tool, stdio, C=1" \
  "${LG[@]}" -mode call -transport stdio -c 1 "${CALL[@]}" -label-a sdk -label-b mcpd -a "$BASE_STDIO" -b "$MCPD_STDIO"

section "stdio floor: a canned-answer server (loadgen -null-server), C=1" \
  "${LG[@]}" -mode call -transport stdio -c 1 -d "$DURATION" -warmup "$WARMUP" -label null -server "$BIN/loadgen -null-server"

section "Session setup (initialize + notifications/initialized), HTTP, C=1" \
  "${LG[@]}" -mode setup -transport http -c 1 "${RUNS[@]}" -label-a sdk -label-b mcpd -a "$BASE" -b "$MCPD"

section "tools/list at 1,000 tools, HTTP, legacy, C=1" \
  "${LG[@]}" -mode list -transport http -c 1 "${CALL[@]}" -label-a sdk -label-b mcpd \
  -a "$BASE --tools 1000" -b "$BIN/mcpd serve -c $OUT/tools-1000.hcl --http {addr} --ui=false --no-watch --log-level warn"

# --- startup, reload, loading ------------------------------------------------------------

section "Startup: process start to the first tools/list, stdio" \
  "${LG[@]}" -mode startup -transport stdio -n "$N" -pairs "$PAIRS" -label-a sdk -label-b mcpd \
  -a "$BASE_STDIO" -b "$BIN/mcpd serve -c $STATIC --stdio --log-level warn"

section "Startup floor: a canned-answer Go server (loadgen -null-server), stdio" \
  "${LG[@]}" -mode startup -transport stdio -n "$N" -label null -server "$BIN/loadgen -null-server"

section "Startup: HTTP (poll the port, initialize, tools/list)" \
  "${LG[@]}" -mode startup -transport http -n "$N" -label mcpd -server "$BIN/mcpd serve -c $STATIC --http {addr} --log-level warn"

section "Startup with the 1,000-tool config, stdio" \
  "${LG[@]}" -mode startup -transport stdio -n "$N" -label mcpd-1000 \
  -server "$BIN/mcpd serve -c $OUT/tools-1000.hcl --stdio --no-watch --log-level warn"

section "Reload: config file written to tools/list_changed received (includes the 50 ms debounce)" \
  "${LG[@]}" -mode reload -transport http -n $((N * 2)) -config-template bench/configs/reload.hcl -label mcpd \
  -server "$BIN/mcpd serve -c {config} --http {addr} --log-level warn"

for n in 1000 10000; do
  loads=20
  [ "$n" = 10000 ] && loads=5
  section "Config load in process, $n tools, one core (mcpd's GC policy)" \
    env "${GC[@]}" "${PIN_CLIENT[@]}" "$BIN/loadtime" -c "$OUT/tools-$n.hcl" -n "$loads"
  section "Config load in process, $n tools, every core (mcpd's GC policy)" \
    env "${GC[@]}" "$BIN/loadtime" -c "$OUT/tools-$n.hcl" -n "$loads"
done

# --- micro-benchmarks ----------------------------------------------------------------------

section "go test micro-benchmarks: the per-call path" \
  go test -run '^$' -bench 'Validate|DecodeJSON|CallContext|EvalTemplate|BenchmarkRun|BenchmarkCall|SQLitePointQuery|RowText|CacheHit' \
  -benchmem -count 1 ./engine/schema ./engine/adapter ./engine/shape ./engine/snapshot ./adapters/sqladapter

section "go test benchmarks: loading and listing (runtime GC defaults)" \
  go test -run '^$' -bench 'BenchmarkDecode$|Load1000Tools|Load10000Tools|ToolsList1000' -benchtime 5x -benchmem -count 1 \
  ./engine/config ./engine/reload

section "go test benchmarks: loading, with mcpd's GC policy" \
  env "${GC[@]}" go test -run '^$' -bench 'Load1000Tools|Load10000Tools' -benchtime 5x -benchmem -count 1 ./engine/reload

# --- profiles --------------------------------------------------------------------------------

for who in mcpd sdk mcpd-sqlite sdk-sqlite; do
  cfg=$STATIC call=()
  case $who in
  *-sqlite) cfg=bench/configs/sqlite-point.hcl call=("${SQLITE_CALL[@]}") ;;
  esac
  case $who in
  mcpd*) srv="env ${GC[*]} $BIN/profserve -c $cfg --http {addr} -cpuprofile $OUT/$who-cpu.pprof" bin=profserve ;;
  sdk-sqlite) srv="$SQLITE_BASE -cpuprofile $OUT/$who-cpu.pprof" bin=baseline ;;
  *) srv="$BASE -cpuprofile $OUT/$who-cpu.pprof" bin=baseline ;;
  esac
  section "CPU profile under load: $who (HTTP, legacy, C=16)" \
    "${LG[@]}" -mode call -transport http -c 16 "${call[@]}" -d "$DURATION" -warmup "$WARMUP" -label "$who" -server "$srv"
  section "Where the CPU goes: $who" \
    bash -c "go tool pprof -top -nodecount=25 $BIN/$bin $OUT/$who-cpu.pprof 2>/dev/null | sed -n '4,40p'"
done

echo
echo "done: $REPORT"
