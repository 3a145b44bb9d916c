#!/usr/bin/env bash
# `bport lock` against Linux perf on a lock-contention workload with a fixed amount of work (threads that map,
# touch and unmap memory: writers of one mmap_lock), in one run:
#   1. overhead: the workload's wall time alone, under `bport lock contention -a` (BPF, no file) and under
#      `perf lock record -a` (every contention a sample in perf.data): throughput ratios;
#   2. report time on a large recording: `perf lock contention -i` vs `bport lock contention -i --stack-skip 3`
#      (the same output, checked) on the same `perf lock record` file.
#
# Usage: benches/lock.sh [RUNS]   (default 5; ITERS=N per thread, THREADS=N; needs root, gcc, Linux perf 5.19+ kernel)
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bport="$root/target/release/bport"
perf=${PERF:-/usr/bin/perf}
iters=${ITERS:-20000}
threads=${THREADS:-4}

cat >"$work/fixed.c" <<'C'
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
static long iters;
static void *hammer(void *a) {
    (void)a;
    for (long i = 0; i < iters; i++) {
        char *p = mmap(0, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        p[0] = 1; p[8192] = 1;
        munmap(p, 16384);
    }
    return 0;
}
int main(int argc, char **argv) {
    iters = atol(argv[1]);
    int n = atoi(argv[2]);
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], 0, hammer, 0);
    for (int i = 0; i < n; i++) pthread_join(t[i], 0);
    return 0;
}
C
cc -O2 -pthread -o "$work/fixed" "$work/fixed.c"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc -l; }

declare -A times
for ((r = 0; r < runs; r++)); do
    # Interleaved, so that other load on the machine hits every configuration alike.
    times[none]+="$(wall "$work/fixed" "$iters" "$threads") "
    times[bport]+="$(wall "$bport" lock contention -a -q -- "$work/fixed" "$iters" "$threads") "
    times[perf]+="$(wall "$perf" lock record -a -o "$work/p.data" -- "$work/fixed" "$iters" "$threads") "
done
none=$(tr ' ' '\n' <<<"${times[none]}" | grep . | median)
printf '%-44s %8.3f s\n' "workload alone" "$none"
for c in bport perf; do
    t=$(tr ' ' '\n' <<<"${times[$c]}" | grep . | median)
    printf '%-44s %8.3f s  throughput %.2fx of alone\n' "$c" "$t" "$(echo "$none / $t" | bc -l)"
done
tb=$(tr ' ' '\n' <<<"${times[bport]}" | grep . | median)
tp=$(tr ' ' '\n' <<<"${times[perf]}" | grep . | median)
printf 'throughput under bport lock contention -a / under perf lock record -a: %.2fx\n' "$(echo "$tp / $tb" | bc -l)"

# 2. A large recording: more work, every contention with its callchain.
"$perf" lock record -a -o "$work/big.data" -- "$work/fixed" $((iters * 10)) $((threads * 2)) >/dev/null 2>&1
size=$(stat -c %s "$work/big.data")
"$perf" lock contention -i "$work/big.data" 2>&1 | sort >"$work/perf.txt"
"$bport" lock contention -i "$work/big.data" --stack-skip 3 | sort >"$work/bport.txt"
cmp -s "$work/perf.txt" "$work/bport.txt" || { echo "reports differ"; diff "$work/perf.txt" "$work/bport.txt" | head; exit 1; }
for ((r = 0; r < runs; r++)); do
    times[ip]+="$(wall "$perf" lock contention -i "$work/big.data") "
    times[ib]+="$(wall "$bport" lock contention -i "$work/big.data" --stack-skip 3) "
done
ip=$(tr ' ' '\n' <<<"${times[ip]}" | grep . | median)
ib=$(tr ' ' '\n' <<<"${times[ib]}" | grep . | median)
printf 'report of a %.1f MB recording: perf %.3f s, bport %.3f s: bport %.1fx faster (same output)\n' \
    "$(echo "$size / 1048576" | bc -l)" "$ip" "$ib" "$(echo "$ip / $ib" | bc -l)"
