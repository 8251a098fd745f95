#!/usr/bin/env bash
# Throughput under concurrency on the GPU host: one server process on a model, closed-loop
# clients (bench/load_generator.py) at each concurrency in turn with the given request bodies,
# then the server's pass histograms (mean requests a pass) and its peak GPU memory.
# Usage: bench/load_bench.sh SERVER MODEL_DIR OUT_DIR [CONCURRENCY ...] -- BODY.json ...
#   MODEL_DIR holds base/, multimodal/ and weights.lock.json (tools/make_full_random_model.py).
#   Each concurrency runs 30 requests a client (at least 60); reports go to OUT_DIR/c<N>.json.
#   SERVER_ARGS (environment): more server options, e.g. "--max-batch-tokens 16384".
#   PROFILE_WITH (environment): a command prefix the server runs under, e.g.
#   "nsys profile -t cuda -o OUT_DIR/load" (stopped with SIGINT at the end, so that it writes).
set -euo pipefail
[ $# -ge 5 ] || { sed -n 2,7p "$0" >&2; exit 2; }
server=$1 model=$2 out=$3
shift 3
levels=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do levels+=("$1"); shift; done
[ "${1:-}" = -- ] || { echo "load_bench: no -- before the bodies" >&2; exit 2; }
shift
bodies=("$@")
mkdir -p "$out"
port=18611
# shellcheck disable=SC2086  # both split into words on purpose
${PROFILE_WITH:-} "$server" --model "$model/base" --adapter "$model/multimodal" \
  --lock "$model/weights.lock.json" --backend cuda --port $port --max-queued-requests 256 \
  ${SERVER_ARGS:-} 2>"$out/server.log" &
server_pid=$!
memory_pid=
cleanup() {
  kill -INT "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  [ -z "$memory_pid" ] || kill "$memory_pid" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$out/server.log" >&2; exit 1; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "load_bench: never ready" >&2; exit 1; }
# GPU memory used, every 0.2 s, while the load runs
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$out/memory.log" &
memory_pid=$!
for c in "${levels[@]}"; do
  requests=$((c * 30 > 60 ? c * 30 : 60))
  echo "== concurrency $c, $requests requests"
  python3 "$(dirname "$0")/load_generator.py" --url "http://127.0.0.1:$port" --concurrency "$c" \
    --requests "$requests" --json "$out/c$c.json" "${bodies[@]}"
done
curl -sf "http://127.0.0.1:$port/metrics" >"$out/metrics.txt"
awk '/^cua_s1_pass_requests_(sum|count)/ {v[$1]=$2}
     END {if (v["cua_s1_pass_requests_count"] > 0)
            printf "passes: %d, mean requests a pass: %.2f\n", v["cua_s1_pass_requests_count"],
                   v["cua_s1_pass_requests_sum"] / v["cua_s1_pass_requests_count"];
          else print "passes: no cua_s1_pass_requests histogram (an older server)"}' "$out/metrics.txt"
echo "peak GPU memory used: $(sort -n "$out/memory.log" | tail -1) MiB"
