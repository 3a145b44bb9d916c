#!/usr/bin/env bash
# Overhead of `bport record` against `perf record` with the same flags, on a CPU-bound workload with a fixed
# amount of work (so wall time measures what the profiler costs), in one run.
#
# Usage: benches/record.sh [RUNS]      (needs root or perf_event_paranoid <= 1, gcc, Linux perf)
# Output: one line per configuration (median of RUNS): wall time, ratio to the unprofiled run, samples, lost
# events and file size; then the bport/perf ratios that go into README.md.
set -euo pipefail
runs=${1:-3}
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
iters=${ITERS:-20000}

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run LABEL TOOL MODEFLAGS BINARY -> prints "label wall samples lost bytes"
run() {
    local label=$1 tool=$2 flags=$3 bin=$4 out="$work/$label.data" walls=() t0 t1
    for _ in $(seq "$runs"); do
        rm -f "$out" "$out.old"
        t0=$(now)
        case $tool in
            none) "$bin" "$iters" ;;
            perf) "$perf" record -q -e cpu-clock -F 999 $flags -o "$out" -- "$bin" "$iters" >/dev/null 2>&1 ;;
            bport) "$bport" -q record -e cpu-clock -F 999 $flags -o "$out" -- "$bin" "$iters" >/dev/null 2>&1 ;;
        esac
        t1=$(now)
        walls+=("$(echo "$t1 - $t0" | bc -l)")
    done
    local wall samples=0 lost=0 bytes=0
    wall=$(printf '%s\n' "${walls[@]}" | median)
    if [ "$tool" != none ]; then
        bytes=$(stat -c %s "$out")
        # Both files are read by the same reader (Linux perf), so the counts are comparable.
        local stats
        stats=$("$perf" report --stats -i "$out" 2>/dev/null || true)
        samples=$(echo "$stats" | awk '/SAMPLE events:/ {print $3; exit}')
        lost=$(echo "$stats" | awk '/LOST events:/ {print $3; exit}')
    fi
    printf '%-12s %8.3f %8s %6s %10s\n' "$label" "$wall" "${samples:-0}" "${lost:-0}" "$bytes"
}

printf '%-12s %8s %8s %6s %10s\n' config wall_s samples lost bytes
{
    run base-fp none "" "$work/fixed-fp"
    run base-nofp none "" "$work/fixed-nofp"
    run perf-g perf "-g" "$work/fixed-fp"
    run bport-g bport "-g" "$work/fixed-fp"
    run perf-dwarf perf "--call-graph dwarf" "$work/fixed-nofp"
    run bport-dwarf bport "--call-graph dwarf" "$work/fixed-nofp"
} | tee "$work/results"

awk '
    { wall[$1] = $2; bytes[$1] = $5; lost[$1] = $4 }
    END {
        printf "\noverhead (wall over unprofiled): perf -g %.1f%%, bport -g %.1f%%, perf dwarf %.1f%%, bport dwarf %.1f%%\n",
            100 * (wall["perf-g"] / wall["base-fp"] - 1), 100 * (wall["bport-g"] / wall["base-fp"] - 1),
            100 * (wall["perf-dwarf"] / wall["base-nofp"] - 1), 100 * (wall["bport-dwarf"] / wall["base-nofp"] - 1)
        printf "bport/perf wall: -g %.3f, dwarf %.3f; file size: -g %.2f, dwarf %.2f; lost: bport %d/%d, perf %d/%d\n",
            wall["bport-g"] / wall["perf-g"], wall["bport-dwarf"] / wall["perf-dwarf"],
            bytes["bport-g"] / bytes["perf-g"], bytes["bport-dwarf"] / bytes["perf-dwarf"],
            lost["bport-g"], lost["bport-dwarf"], lost["perf-g"], lost["perf-dwarf"]
    }' "$work/results"
