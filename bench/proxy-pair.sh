#!/usr/bin/env bash
# bench/proxy-pair.sh MCPD REVPROXY ADDR: the reference side of the gateway
# benchmark (docs/performance.md, "The gateway's fast path"). It starts the
# same mcpd upstream as bench/gateway-pair.sh (bench/configs/static.hcl over
# HTTP, JSON answers) on a free port, then execs bench/revproxy (Go's
# httputil.ReverseProxy) on ADDR in front of it. The upstream is the
# proxy's child, so loadgen -tree counts the CPU time of both, as it does
# for the gateway pair.
set -euo pipefail
MCPD=$1 REVPROXY=$2 ADDR=$3
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UPPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$MCPD" serve -c "$ROOT/bench/configs/static.hcl" --http "127.0.0.1:$UPPORT" --ui=false --json-response --log-level warn </dev/null &
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$UPPORT") 2>/dev/null; then break; fi
  sleep 0.05
done
exec "$REVPROXY" -listen "$ADDR" -upstream "http://127.0.0.1:$UPPORT"
