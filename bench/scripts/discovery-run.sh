#!/usr/bin/env bash
# A quick, one-crawl measurement of `trawler run` on a web found by discovery:
# websim (bench/websim) with HOSTS x PAGES pages, one seed host, --out on,
# delay 0 and k 0, loopback only. Prints pages/s, pages per CPU-second, peak
# RSS and disk bytes written per page (/proc/PID/io write_bytes) of the
# trawler process. For comparisons against Colly and Wget, use
# bench/cmd/e2e; this script is for a before/after of one change.
#
#   bench/scripts/discovery-run.sh [HOSTS] [PAGES] [extra trawler flags...]
#   TRAWLER_BIN=/tmp/old-trawler bench/scripts/discovery-run.sh 50 200
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
hosts="${1:-50}"; pages="${2:-200}"; shift $(( $# >= 2 ? 2 : $# ))
dir="$(mktemp -d /tmp/trawler-discovery.XXXX)"
(cd "$root/bench" && go build -o "$dir/websim" ./cmd/websim)
bin="${TRAWLER_BIN:-}"
if [ -z "$bin" ]; then bin="$dir/trawler"; (cd "$root" && go build -o "$bin" ./cmd/trawler); fi
port="${PORT:-18190}"
"$dir/websim" -hosts "$hosts" -pages "$pages" -seed-hosts 1 -seeds "$dir/seeds.txt" -port "$port" >"$dir/websim.log" 2>&1 &
ws=$!
trap 'kill $ws 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$dir/seeds.txt" ] && break; sleep 0.1; done
start=$(date +%s.%N)
"$bin" run --seed "$(head -1 "$dir/seeds.txt")" --data-dir "$dir/data" --out "$dir/pages.jsonl" --scope any \
  --allow-private --allow '^http://127\.' --politeness-delay 0 --politeness-factor 0 --progress=false "$@" >"$dir/run.log" 2>&1 &
pid=$!
peak=0; wb=0; cpu=0
while kill -0 "$pid" 2>/dev/null; do
  r=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || true); [ -n "$r" ] && peak=$r
  w=$(awk '/^write_bytes/{print $2}' "/proc/$pid/io" 2>/dev/null || true); [ -n "$w" ] && wb=$w
  c=$(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null || true); [ -n "$c" ] && cpu=$c
  sleep 0.2
done
end=$(date +%s.%N)
ok=$(grep -c '"status":200' "$dir/pages.jsonl" || true)
python3 - "$ok" "$start" "$end" "$cpu" "$peak" "$wb" "$(getconf CLK_TCK)" <<'PY'
import sys
ok, s, e, cpu, peak, wb, hz = sys.argv[1:]
ok = int(ok); wall = float(e) - float(s); cpu = int(cpu) / int(hz)
print(f"{ok} pages (200) in {wall:.1f} s: {ok/wall:.0f} pages/s, {ok/max(cpu, 0.01):.0f} pages per CPU-second, "
      f"peak RSS {int(peak)/1024:.0f} MiB, {int(wb)/max(ok, 1)/1024:.1f} KiB written per page")
PY
echo "run log and output: $dir"
