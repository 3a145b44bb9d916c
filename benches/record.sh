#!/usr/bin/env bash
# Overhead of `bport record` against `perf record` with the same flags, on a CPU-bound workload with a fixed
# amount of work (so wall time measures what the profiler costs), in one run.
#
# Usage: benches/record.sh [RUNS]      (default 5; ITERS=N sets the work; needs root or perf_event_paranoid <= 1, gcc, Linux perf)
# Output: one line per configuration (median of RUNS): wall time, ratio to the unprofiled run, samples, lost
# events and file size; then the bport/perf ratios that go into benches/README.md.
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bport="$root/target/release/bport"
perf=${PERF:-/usr/bin/perf}

# The chain workload with a fixed iteration count instead of a time budget; built without frame pointers for the
# dwarf runs and with them for -g, exactly like the built-in workloads.
cat >"$work/fixed.c" <<'C'
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) unsigned long chain_c(unsigned long n)
{ unsigned long x = n; for (unsigned long i = 0; i < 200000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL; sink = x; return x; }
__attribute__((noinline)) unsigned long chain_b(unsigned long n) { unsigned long r = chain_c(n + 1); sink = r; return r ^ n; }
__attribute__((noinline)) unsigned long chain_a(unsigned long n) { unsigned long r = chain_b(n + 2); sink = r; return r + n; }
int main(int argc, char **argv)
{ unsigned long iters = argc > 1 ? strtoul(argv[1], 0, 10) : 10000, acc = 0;
  for (unsigned long n = 0; n < iters; n++) acc += chain_a(n); sink = acc; return 0; }
C
cc -O2 -static -fno-inline -fasynchronous-unwind-tables -Wl,--eh-frame-hdr -fno-omit-frame-pointer \
   -o "$work/fixed-fp" "$work/fixed.c"
cc -O2 -static -fno-inline -fasynchronous-unwind-tables -Wl,--eh-frame-hdr -fomit-frame-pointer \
   -o "$work/fixed-nofp" "$work/fixed.c"
iters=${ITERS:-8000}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

configs=(
    "base-fp none - fixed-fp"
    "base-nofp none - fixed-nofp"
    "perf-g perf -g fixed-fp"
    "bport-g bport -g fixed-fp"
    "perf-dwarf perf --call-graph=dwarf fixed-nofp"
    "bport-dwarf bport --call-graph=dwarf fixed-nofp"
)

# One run of a configuration: appends "wall cpu" (seconds; cpu = user + system of the whole process tree, i.e.
# workload plus profiler, which a loaded machine disturbs less than wall time) to $work/<label>.times.
once() {
    local label=$1 tool=$2 flags=$3 bin="$work/$4"
    local out="$work/$label.data"
    local -a cmd
    rm -f "$out" "$out.old"
    case $tool in
        none) cmd=("$bin" "$iters") ;;
        perf) cmd=("$perf" record -q -e cpu-clock -F 999 "$flags" -o "$out" -- "$bin" "$iters") ;;
        bport) cmd=("$bport" -q record -e cpu-clock -F 999 "$flags" -o "$out" -- "$bin" "$iters") ;;
    esac
    local TIMEFORMAT="%R %U %S"
    { time "${cmd[@]}" >/dev/null 2>&1; } 2>>"$work/$label.raw"
}

# Interleave the configurations so that load from other processes hits all of them alike.
for _ in $(seq "$runs"); do
    for c in "${configs[@]}"; do
        # shellcheck disable=SC2086
        once $c
    done
done

printf '%-12s %8s %8s %8s %6s %10s\n' config wall_s cpu_s samples lost bytes | tee "$work/results"
for c in "${configs[@]}"; do
    read -r label tool _ _ <<<"$c"
    wall=$(awk '{print $1}' "$work/$label.raw" | median)
    cpu=$(awk '{print $2 + $3}' "$work/$label.raw" | median)
    samples=0 lost=0 bytes=0
    if [ "$tool" != none ]; then
        out="$work/$label.data"
        bytes=$(stat -c %s "$out")
        # Both files are read by the same reader (Linux perf), so the counts are comparable.
        stats=$("$perf" report --stats -i "$out" 2>/dev/null || true)
        samples=$(echo "$stats" | awk '/SAMPLE events:/ {print $3; exit}')
        lost=$(echo "$stats" | awk '/LOST events:/ {print $3; exit}')
    fi
    printf '%-12s %8.3f %8.3f %8s %6s %10s\n' "$label" "$wall" "$cpu" "${samples:-0}" "${lost:-0}" "$bytes"
done | tee -a "$work/results"

awk 'NR > 1 { wall[$1] = $2; cpu[$1] = $3; lost[$1] = $5; bytes[$1] = $6 }
    END {
        printf "\nprofiler CPU (cpu over unprofiled): perf -g %.3fs, bport -g %.3fs, perf dwarf %.3fs, bport dwarf %.3fs\n",
            cpu["perf-g"] - cpu["base-fp"], cpu["bport-g"] - cpu["base-fp"],
            cpu["perf-dwarf"] - cpu["base-nofp"], cpu["bport-dwarf"] - cpu["base-nofp"]
        printf "bport/perf: wall -g %.3f, dwarf %.3f; cpu -g %.3f, dwarf %.3f; file size -g %.2f, dwarf %.2f\n",
            wall["bport-g"] / wall["perf-g"], wall["bport-dwarf"] / wall["perf-dwarf"],
            cpu["bport-g"] / cpu["perf-g"], cpu["bport-dwarf"] / cpu["perf-dwarf"],
            bytes["bport-g"] / bytes["perf-g"], bytes["bport-dwarf"] / bytes["perf-dwarf"]
        printf "lost events: bport -g %d, dwarf %d; perf -g %d, dwarf %d\n",
            lost["bport-g"], lost["bport-dwarf"], lost["perf-g"], lost["perf-dwarf"]
    }' "$work/results"
