#!/usr/bin/env bash
# A quick, one-crawl measurement of `trawler run` on a web found by discovery:
# websim (bench/websim) with HOSTS x PAGES pages, one seed host, --out on,
# delay 0 and k 0, loopback only. Prints pages/s, pages per CPU-second, peak
# RSS and disk bytes written per page (/proc/PID/io write_bytes) of the
# trawler process. For comparisons against Colly and Wget, use
# bench/cmd/e2e; this script is for a before/after of one change.
# NO_OUT=1 leaves --out off, so that the bytes written are the crawler's own
# (pages are then counted from the run's summary). "cancelled" is what the
# process wrote and then deleted or truncated before the kernel wrote it back
# (cancelled_write_bytes): counted in "written", never reaching the disk.
# RSS_LOG=FILE records the RSS every 5 s (seconds, RSS MiB, MiB written so far).
#
#   bench/scripts/discovery-run.sh [HOSTS] [PAGES] [extra trawler flags...]
#   TRAWLER_BIN=/tmp/old-trawler bench/scripts/discovery-run.sh 50 200
#   NO_OUT=1 bench/scripts/discovery-run.sh 100 250
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
out=(--out "$dir/pages.jsonl"); [ -n "${NO_OUT:-}" ] && out=()
start=$(date +%s.%N)
"$bin" run --seed "$(head -1 "$dir/seeds.txt")" --data-dir "$dir/data" "${out[@]}" --scope any \
  --allow-private --allow '^http://127\.' --politeness-delay 0 --politeness-factor 0 --progress=false "$@" >"$dir/run.log" 2>&1 &
pid=$!
peak=0; wb=0; cw=0; cpu=0; n=0
while kill -0 "$pid" 2>/dev/null; do
  r=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || true); [ -n "$r" ] && peak=$r
  w=$(awk '/^write_bytes/{print $2}' "/proc/$pid/io" 2>/dev/null || true); [ -n "$w" ] && wb=$w
  w=$(awk '/^cancelled_write_bytes/{print $2}' "/proc/$pid/io" 2>/dev/null || true); [ -n "$w" ] && cw=$w
  c=$(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null || true); [ -n "$c" ] && cpu=$c
  n=$((n + 1))
  if [ -n "${RSS_LOG:-}" ] && [ $((n % 25)) = 0 ]; then
    rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    echo "$(( n / 5 )) $((rss / 1024)) $((wb / 1048576))" >>"$RSS_LOG"
  fi
  sleep 0.2
done
end=$(date +%s.%N)
if [ -n "${NO_OUT:-}" ]; then
  ok=$(awk '$1 == "responses" {sub(",", "", $3); print $3}' "$dir/run.log")
else
  ok=$(grep -c '"status":200' "$dir/pages.jsonl" || true)
fi
python3 - "${ok:-0}" "$start" "$end" "$cpu" "$peak" "$wb" "$cw" "$(getconf CLK_TCK)" <<'PY'
import sys
ok, s, e, cpu, peak, wb, cw, hz = sys.argv[1:]
ok = int(ok); wall = float(e) - float(s); cpu = int(cpu) / int(hz)
print(f"{ok} pages (200) in {wall:.1f} s: {ok/wall:.0f} pages/s, {ok/max(cpu, 0.01):.0f} pages per CPU-second, "
      f"peak RSS {int(peak)/1024:.0f} MiB, {int(wb)/max(ok, 1)/1024:.1f} KiB written per page "
      f"({int(cw)/max(ok, 1)/1024:.1f} KiB of it cancelled)")
PY
echo "run log and output: $dir"
