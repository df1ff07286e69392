#!/usr/bin/env bash
# Counts the cache misses of the client's own code on calls that find the
# CPU's caches cold, with valgrind's cache simulator (callgrind). The counts
# are deterministic, so they compare two versions of the code even on a
# machine whose wall-clock timings are too noisy to (BenchmarkInvokeCold
# measures the same regime in nanoseconds).
#
#   scripts/footprint.sh [ITERATIONS]
#
# Runs cloudreq's BenchmarkInvokeCold for ITERATIONS iterations (default
# 200; each sweeps 4 MiB, then makes a cold call and a warm one) on a
# simulated 32 KiB L1 instruction cache, 48 KiB L1 data cache and 2 MiB
# last-level cache, and prints, per iteration, for the functions of this
# module and of the runtime: instructions executed, L1 instruction misses,
# and last-level misses (instruction fetches, data reads, data writes).
# Installs Debian's valgrind when missing (needs root and apt).
set -euo pipefail

iters=${1:-200}
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null 2>&1; then
  echo "installing valgrind" >&2
  apt-get install -y valgrind >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/cloudreq.test" ./cloudreq/

# Callgrind cannot follow the signals of Go's asynchronous preemption, and
# valgrind 3.19 does not know RDTSCP, which the runtime runs now and then
# while it spins on a lock: such a run dies of SIGILL and is tried again.
ok=""
for try in 1 2 3 4 5; do
  if (cd cloudreq && GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --cache-sim=yes \
    --I1=32768,8,64 --D1=49152,12,64 --LL=2097152,16,64 \
    --callgrind-out-file="$work/callgrind.out" \
    "$work/cloudreq.test" -test.run '^$' -test.bench '^BenchmarkInvokeCold$' \
    -test.benchtime "${iters}x" -test.cpu 1 -cold.evict-mb=4) >"$work/run.log" 2>&1 &&
    grep -q '^PASS' "$work/run.log"; then
    ok=1
    break
  fi
done
if [[ -z $ok ]]; then
  cat "$work/run.log" >&2
  exit 1
fi

# Per function: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw file:function.
callgrind_annotate --auto=no --inclusive=no --threshold=100 "$work/callgrind.out" |
  sed -n '/file:function/,$p' | tail -n +3 | sed 's/([ 0-9.]*%)//g; s/,//g' |
  awk -v n="$iters" -v mod="$(go list -m)" '
    NF >= 10 {
      fn = $10; sub(/^[^:]*:/, "", fn)
      g = ""
      if (index(fn, mod "/") == 1 && fn !~ /_test\./ && fn !~ /BenchmarkInvokeCold|tracedAdapter/) g = "cloudinfer"
      else if (fn ~ /^runtime\./) g = "runtime"
      if (g == "") next
      for (i = 1; i <= 9; i++) { v = ($i == ".") ? 0 : $i; s[g, i] += v }
      seen[g] = 1
    }
    END {
      printf "%-14s %8s %9s %9s %9s %9s\n", "per iteration", "instr", "L1i miss", "LLi miss", "LLd rd", "LLd wr"
      split("cloudinfer runtime", order, " ")
      for (k = 1; k <= 2; k++) {
        g = order[k]
        if (!(g in seen)) continue
        printf "%-14s %8.0f %9.1f %9.1f %9.1f %9.1f\n", g, s[g,1]/n, s[g,4]/n, s[g,7]/n, s[g,8]/n, s[g,9]/n
      }
    }'
