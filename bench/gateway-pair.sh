#!/usr/bin/env bash
# bench/gateway-pair.sh MCPD ADDR: the gateway benchmark's server (see
# docs/performance.md, "Gateway overhead"). It starts an mcpd upstream
# serving bench/configs/static.hcl over HTTP on a free port, then execs an
# mcpd gateway on ADDR serving bench/configs/gateway.hcl, whose tool static
# is the upstream's (HTTP both hops). The upstream is the gateway's child, so loadgen -tree counts the
# CPU time of both.
set -euo pipefail
MCPD=$1 ADDR=$2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UPPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$MCPD" serve -c "$ROOT/bench/configs/static.hcl" --http "127.0.0.1:$UPPORT" --ui=false --json-response --log-level warn </dev/null &
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$UPPORT") 2>/dev/null; then break; fi
  sleep 0.05
done
MCPD_BENCH_UPSTREAM="http://127.0.0.1:$UPPORT/mcp" exec "$MCPD" serve -c "$ROOT/bench/configs/gateway.hcl" --http "$ADDR" --ui=false --log-level warn
