#!/usr/bin/env python3
"""`bport script` against `perf script` on recordings of real programs, in one run.

Records with Linux perf while real programs run, then times both tools on the SAME file and checks that their
outputs are identical:

  system-wide-fp     perf record -a -F 999 -g                   (~3 s, everything on the machine)
  system-wide-dwarf  perf record -a -F 999 --call-graph dwarf   (~3 s)
  python-fp          perf record -F 999 -g on one python3 process (CPU-bound loop)
  cc1-fp             perf record -F 999 -g on gcc compiling a C file (the driver, cc1 and as)

While the system-wide recordings run, three real programs keep the CPUs busy: python3 running a CPU-bound
script, gcc compiling a generated C file over and over, and a C++ binary (built here with g++ -O2) hashing maps
and sorting vectors. Whatever else runs on the machine is recorded too, so the DSO count is the machine's.

Each tool reads each file once untimed (its output kept for the comparison), then RUNS timed runs, interleaved,
(a file perf script needs more than BPORT_BENCH_SLOW seconds for is timed by that first run alone),
writing into a pipe this script drains. CPU is user + system time of the tool's process (all its threads, and
the children it waited for), taken from wait4: perf's addr2line helpers, where most of its wall time on a
system-wide DWARF file goes, are not counted there, so compare wall times for that file. The table gives min / median / max of the per-run ratios perf / bport. Any differing line fails the
bench (exit 1) after the table, with the count of differing lines (those `diff` marks `<` or `>`) and the first
difference.

Run (root, or perf_event_paranoid <= 1; perf 6.1, gcc, g++, python3):

    cargo build --release && python3 benches/script_system.py

Environment: BPORT (the binary, default target/release/bport), BPORT_BENCH_SECONDS (recording length, default 3),
BPORT_BENCH_RUNS (timed runs per tool, default 3), BPORT_BENCH_SLOW (seconds: a file perf script takes longer on
is timed by its capturing runs only, default 60), BPORT_BENCH_TIMEOUT
(seconds after which perf script is killed, the row then giving a lower bound; default 900), BPORT_BENCH_KEEP=1 keeps the recordings and prints where.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BPORT = os.environ.get("BPORT", os.path.join(ROOT, "target", "release", "bport"))
SECONDS = float(os.environ.get("BPORT_BENCH_SECONDS", "3"))
RUNS = int(os.environ.get("BPORT_BENCH_RUNS", "3"))
SLOW = float(os.environ.get("BPORT_BENCH_SLOW", "60"))
TIMEOUT = float(os.environ.get("BPORT_BENCH_TIMEOUT", "900"))

PY_LOOP = """
import json, time, re
end = time.time() + {secs}
pat = re.compile(r"(\\w+)=(\\d+)")
while time.time() < end:
    s = json.dumps([{{'a': i, 'b': str(i) * 3}} for i in range(2000)])
    sum(int(m.group(2)) for m in pat.finditer(s.replace('"a": ', 'a=')))
"""

C_FILE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct node { struct node *l, *r; int k; char name[32]; };
static struct node *insert(struct node *t, int k) {
  if (!t) { t = calloc(1, sizeof *t); t->k = k; snprintf(t->name, sizeof t->name, "n%d", k); return t; }
  if (k < t->k) t->l = insert(t->l, k); else t->r = insert(t->r, k);
  return t;
}
""" + "".join(
    f"""
static int walk{i}(struct node *t, int d) {{
  if (!t) return d;
  int a = walk{i}(t->l, d + 1), b = walk{i}(t->r, d + 1);
  return (a > b ? a : b) + (int)strlen(t->name) % {i + 2};
}}
int api{i}(int n) {{
  struct node *t = 0;
  for (int j = 0; j < n; j++) t = insert(t, (j * {i * 7919 + 13}) % 10007);
  return walk{i}(t, 0);
}}
"""
    for i in range(120)
)

CXX_FILE = r"""
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
__attribute__((noinline)) static long churn(int round) {
  std::unordered_map<std::string, long> h;
  std::map<long, std::string> m;
  std::vector<long> v;
  for (int i = 0; i < 20000; i++) {
    std::string k = "key" + std::to_string((i * 2654435761u + round) % 50021);
    h[k] += i;
    v.push_back((long)std::hash<std::string>()(k));
  }
  std::sort(v.begin(), v.end());
  for (auto &kv : h) m.emplace(kv.second, kv.first);
  return (long)m.size() + v[v.size() / 2];
}
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 3;
  time_t end = time(nullptr) + (time_t)secs + 1;
  long s = 0;
  for (int r = 0; time(nullptr) < end; r++) s += churn(r);
  printf("%ld\n", s);
}
"""


def die(msg):
    sys.exit(f"script_system: {msg}")


def real_python():
    """The interpreter by its real path: a launcher that execs it (pyenv's shim) would make the recorded process
    exec, and perf 6.1 unwinds DWARF samples after an exec from stale unwind data."""
    out = subprocess.run(["python3", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
    return out.stdout.strip() or "python3"


def record(work, name, flags, cmd, env):
    out = os.path.join(work, f"{name}.data")
    r = subprocess.run(
        ["perf", "record", "-q", "-o", out, *flags, "--", *cmd],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if r.returncode != 0:
        die(f"perf record {name} failed:\n{r.stderr}")
    return out


def system_wide(work, flags, name, env, python, cxx_bin, c_src):
    """Records the whole machine for SECONDS while python3, gcc and the C++ binary run."""
    secs = str(SECONDS)
    loads = [
        subprocess.Popen([python, "-c", PY_LOOP.format(secs=SECONDS + 1)], env=env),
        subprocess.Popen(
            [
                "sh",
                "-c",
                f'end=$(( $(date +%s) + {int(SECONDS) + 1} )); '
                f'while [ $(date +%s) -lt $end ]; do gcc -O2 -c {c_src} -o /dev/null; done',
            ],
            env=env,
        ),
        subprocess.Popen([cxx_bin, secs], env=env, stdout=subprocess.DEVNULL),
    ]
    time.sleep(0.3)
    path = record(work, name, ["-a", *flags], ["sleep", secs], env)
    for p in loads:
        p.wait()
    return path


def run_once(cmd, env, capture):
    """Runs `cmd`, draining its stdout. Returns (wall s, cpu s, output bytes or byte count)."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    chunks = [] if capture else None
    count = 0
    buf = bytearray(1 << 20)
    fd = p.stdout.fileno()
    killer = threading.Timer(TIMEOUT, p.kill)
    killer.start()
    while True:
        n = os.readv(fd, [buf])
        if n == 0:
            break
        count += n
        if capture:
            chunks.append(bytes(buf[:n]))
    p.stdout.close()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    killer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode == -9 and wall >= TIMEOUT:
        raise TimeoutError(wall)
    if p.returncode != 0:
        die(f"{' '.join(cmd)} exited {p.returncode}")
    return wall, ru.ru_utime + ru.ru_stime, (b"".join(chunks) if capture else count)


def compare(name, perf_out, ours_out):
    """The number of lines only one output has (`diff`'s `<` and `>` lines), and the first difference."""
    if perf_out == ours_out:
        return 0
    a, b = perf_out.split(b"\n"), ours_out.split(b"\n")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            print(f"{name}: line {i + 1} differs:\n  perf:  {x.decode(errors='replace')}\n"
                  f"  bport: {y.decode(errors='replace')}", file=sys.stderr)
            break
    with tempfile.TemporaryDirectory() as d:
        pa, pb = os.path.join(d, "perf"), os.path.join(d, "bport")
        with open(pa, "wb") as f:
            f.write(perf_out)
        with open(pb, "wb") as f:
            f.write(ours_out)
        out = subprocess.run(["diff", pa, pb], capture_output=True).stdout
    return max(1, sum(1 for line in out.split(b"\n") if line[:1] in (b"<", b">")))


def fmt3(xs, unit):
    xs = sorted(xs)
    return " / ".join(f"{x:.2f}{unit}" if unit != "×" else f"{x:.1f}×" for x in (xs[0], statistics.median(xs), xs[-1]))


def bench(name, path, env):
    perf_cmd = ["perf", "script", "-i", path]
    ours_cmd = [BPORT, "script", "-i", path]
    ours_wall, ours_cpu, ours_out = run_once(ours_cmd, env, True)
    try:
        perf_wall, perf_cpu, perf_out = run_once(perf_cmd, env, True)
    except TimeoutError:
        # No comparison possible: the row gives bport's time and perf's lower bound, and the bench fails.
        lines = ours_out.count(b"\n")
        print(f"| {name} | {os.path.getsize(path) / 1e6:.1f} MB | {lines:,} (bport) | 1 | "
              f"killed after {TIMEOUT:.0f} s wall | {ours_cpu:.2f} s | | > {TIMEOUT:.0f} / {ours_wall:.2f} s | "
              f"> {TIMEOUT / ours_wall:.0f}× | not checked: perf did not finish |", flush=True)
        return 1
    differ = compare(name, perf_out, ours_out)
    perf_t, ours_t = [], []
    # perf script on a system-wide DWARF file can take many minutes (it runs addr2line over every large DSO
    # a frame hits): such a file's capturing runs are its only timed ones.
    runs = RUNS if perf_wall < SLOW else 0
    if runs == 0:
        perf_t.append((perf_wall, perf_cpu))
        ours_t.append((ours_wall, ours_cpu))
    for _ in range(runs):
        for cmd, out, acc in ((perf_cmd, perf_out, perf_t), (ours_cmd, ours_out, ours_t)):
            wall, cpu, n = run_once(cmd, env, False)
            if n != len(out):
                die(f"{' '.join(cmd)}: output length changed between runs ({n} against {len(out)})")
            acc.append((wall, cpu))
    size = os.path.getsize(path) / 1e6
    lines = perf_out.count(b"\n")
    cpu_ratio = [p[1] / max(o[1], 1e-3) for p, o in zip(perf_t, ours_t)]
    wall_ratio = [p[0] / o[0] for p, o in zip(perf_t, ours_t)]
    print(
        f"| {name} | {size:.1f} MB | {lines:,} | {len(perf_t)} | "
        f"{fmt3([c for _, c in perf_t], ' s')} | {fmt3([c for _, c in ours_t], ' s')} | **{fmt3(cpu_ratio, '×')}** | "
        f"{statistics.median(w for w, _ in perf_t):.2f} / {statistics.median(w for w, _ in ours_t):.3f} s | "
        f"{fmt3(wall_ratio, '×')} | {'yes' if differ == 0 else f'NO: {differ} lines differ'} |",
        flush=True,
    )
    return differ


def main():
    for tool in ("perf", "gcc", "g++"):
        if shutil.which(tool) is None:
            die(f"{tool} not found (apt-get install linux-perf gcc g++)")
    if not os.access(BPORT, os.X_OK):
        die(f"{BPORT} not found: run cargo build --release first")
    work = tempfile.mkdtemp(prefix="bport-script-system-")
    # One HOME for recording and both readers: the same build-id cache for both tools.
    env = dict(os.environ, HOME=work, LC_ALL="C")
    env.pop("BPORT_LOG", None)
    python = real_python()
    c_src = os.path.join(work, "tree.c")
    with open(c_src, "w") as f:
        f.write(C_FILE)
    cxx_src = os.path.join(work, "churn.cpp")
    cxx_bin = os.path.join(work, "churn")
    with open(cxx_src, "w") as f:
        f.write(CXX_FILE)
    subprocess.run(["g++", "-O2", "-g", "-fno-omit-frame-pointer", cxx_src, "-o", cxx_bin], check=True)

    files = [
        ("system-wide-fp", system_wide(work, ["-F", "999", "-g"], "system-wide-fp", env, python, cxx_bin, c_src)),
        ("python-fp", record(work, "python-fp", ["-F", "999", "-g"],
                             [python, "-c", PY_LOOP.format(secs=SECONDS)], env)),
        ("cc1-fp", record(work, "cc1-fp", ["-F", "999", "-g"],
                          ["sh", "-c", f"for i in 1 2 3; do gcc -O2 -c {c_src} -o /dev/null; done"], env)),
        # Last: perf script may need many minutes on it.
        ("system-wide-dwarf",
         system_wide(work, ["-F", "999", "--call-graph", "dwarf"], "system-wide-dwarf", env, python, cxx_bin, c_src)),
    ]
    load = os.getloadavg()[0]
    print(f"bport script against perf script ({RUNS} timed runs each, interleaved; load average {load:.1f})\n")
    print("| file | size | lines | runs | perf CPU (min / med / max) | bport CPU | CPU: bport is | wall, median perf / bport "
          "| wall: bport is | identical |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    failed = 0
    for name, path in files:
        failed += bench(name, path, env) != 0
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    if os.environ.get("BPORT_BENCH_KEEP"):
        print(f"kept {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        die(f"{failed} file(s) where bport's output differs from perf's")


if __name__ == "__main__":
    main()
