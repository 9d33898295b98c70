#!/usr/bin/env bash
# A before/after of one change on few hosts without a delay, where a crawl is
# a chain of one page at a time per host: websim's discovery web (one seed,
# named hosts resolved by its DNS server, port 80 on 127.7.x.y), `trawler run`
# with --out, timed from start to exit. Prints the process's wall time, the
# --out lines (pages, redirects and errors), pages/s and pages per CPU-second.
# For comparisons with Colly and Wget use bench/cmd/e2e (-few 1x3000).
#
#   bench/scripts/few-hosts.sh HOSTS PAGES [extra trawler flags...]
#   TRAWLER_BIN=/tmp/old bench/scripts/few-hosts.sh 1 3000 --max-pages 100000
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
hosts="${1:-1}"; pages="${2:-3000}"; shift $(( $# >= 2 ? 2 : $# ))
dir="$(mktemp -d /tmp/trawler-few.XXXX)"
(cd "$root/bench" && go build -o "$dir/websim" ./cmd/websim)
bin="${TRAWLER_BIN:-}"
if [ -z "$bin" ]; then bin="$dir/trawler"; (cd "$root" && go build -o "$bin" ./cmd/trawler); fi
"$dir/websim" -hosts "$hosts" -pages "$pages" -discovery -port 80 -block 7 -seeds "$dir/seeds.txt" >"$dir/websim.log" 2>&1 &
ws=$!
trap 'kill $ws 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do grep -q "DNS server" "$dir/websim.log" && [ -s "$dir/seeds.txt" ] && break; sleep 0.1; done
dns=$(grep -oE "DNS server [0-9.]+:[0-9]+" "$dir/websim.log" | cut -d" " -f3)
[ -n "$dns" ] || { echo "few-hosts: websim did not start; its log:" >&2; cat "$dir/websim.log" >&2; exit 1; }
start=$(date +%s.%N)
if ! /usr/bin/env time -f "%U %S" -o "$dir/time" "$bin" run --data-dir "$dir/data" --allow-private \
  --politeness-delay 0s --politeness-factor 0 --scope any --seeds-file "$dir/seeds.txt" --dns-servers "$dns" \
  --out "$dir/out.jsonl" --progress=false "$@" >"$dir/run.log" 2>&1; then
  echo "few-hosts: trawler run failed; the end of its log:" >&2; tail -20 "$dir/run.log" >&2; exit 1
fi
end=$(date +%s.%N)
lines=$(wc -l <"$dir/out.jsonl")
cpu=$(awk '{print $1+$2}' "$dir/time")
awk -v s="$start" -v e="$end" -v n="$lines" -v c="$cpu" 'BEGIN {
  w = e - s; printf "wall %.3f s, %d lines, %.1f pages/s, CPU %.2f s, %.0f pages/CPU-s\n", w, n, n / w, c, n / c }'
