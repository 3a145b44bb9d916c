#!/usr/bin/env bash
# `bport probe` against `perf probe` on big binaries, the same spec in the same run: the time to plan a probe
# (`-n`, nothing written to tracefs), to show lines (`-L`) and variables (`-V`), best of RUNS interleaved runs
# (wall and CPU ms), the wall ratio perf/bport (above 1: bport is faster) and whether the two outputs are the
# same (definitions: perf's `Writing event:` lines of -v against bport's -n output).
#
# Binaries:
#   - bport's own debug build (target/debug/bport, ~100 MB, ~800 units of Rust and some C), copied first so
#     that a build during the run does not change it;
#   - a C++ program generated here (CXX_UNITS units, each instantiating STL containers, iostreams and
#     std::regex; g++ -g -O1, so inlined copies and location lists), built once into target/bench-probe/.
#
# Usage: benches/probe.sh [RUNS]   (default 5; BPORT=path to time another bport build; needs root, perf, g++)
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
perf=${PERF:-/usr/bin/perf}

if [[ -z ${BPORT:-} ]]; then
    cargo build --release --quiet --manifest-path "$root/Cargo.toml"
    BPORT="$root/target/release/bport"
fi
[[ -x $root/target/debug/bport ]] || cargo build --quiet --manifest-path "$root/Cargo.toml"
cp "$root/target/debug/bport" "$work/bportdbg"

units=${CXX_UNITS:-24}
cache="$root/target/bench-probe"
cxx="$cache/cxx$units"
if [[ ! -x $cxx ]]; then
    mkdir -p "$cache/src"
    cat >"$cache/src/unit.cc" <<'CXX'
#include <algorithm>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
namespace UNIT {
struct Item { int id; std::string name; double weight; };
static std::map<std::string, std::vector<Item>> table;
int work(int n) {
    std::unordered_map<int, std::string> names;
    std::vector<std::shared_ptr<Item>> items;
    std::set<std::string> seen;
    std::deque<int> q;
    for (int k = 0; k < n; k++) {
        std::ostringstream os;
        os << "item" << k;
        names[k] = os.str();
        seen.insert(os.str());
        q.push_back(k);
        items.push_back(std::make_shared<Item>(Item{k, os.str(), k * 0.5}));
    }
    std::sort(items.begin(), items.end(), [](auto &a, auto &b) { return a->weight > b->weight; });
    std::regex re("item([0-9]+)");
    int acc = 0;
    for (auto &it : items) {
        std::smatch m;
        if (std::regex_match(it->name, m, re))
            acc += std::stoi(m[1]);
        table[it->name].push_back(*it);
    }
    std::function<int(int)> f = [&](int x) { return x + acc; };
    std::cerr << "";
    return f(static_cast<int>(names.size() + seen.size() + q.size()));
}
}
CXX
    {
        echo '#include <cstdio>'
        for ((i = 1; i <= units; i++)); do echo "namespace u$i { int work(int); }"; done
        echo 'int main(int argc, char **) {'
        echo '    int s = 0;'
        for ((i = 1; i <= units; i++)); do echo "    s += u$i::work(argc);"; done
        echo '    printf("%d\n", s);'
        echo '    return 0;'
        echo '}'
    } >"$cache/src/main.cc"
    echo "building the C++ program ($units units, once)..." >&2
    seq 1 "$units" | xargs -P "$(nproc)" -I{} g++ -g -O1 -DUNIT=u{} -c "$cache/src/unit.cc" -o "$cache/src/u{}.o"
    g++ -g -O1 -c "$cache/src/main.cc" -o "$cache/src/main.o"
    g++ -o "$cxx" "$cache/src"/u*.o "$cache/src/main.o"
fi
cp "$cxx" "$work/cxx"

mb() { echo $(($(stat -c %s "$1") / 1048576)); }
# name|binary|arguments after -x BINARY (one argument per line after the first two fields: `;` separated)
cases=(
    "bport debug $(mb "$work/bportdbg") MB|$work/bportdbg|-n;main"
    "bport debug $(mb "$work/bportdbg") MB|$work/bportdbg|-n;glob_match pattern text"
    "bport debug $(mb "$work/bportdbg") MB|$work/bportdbg|-L;user_group"
    "bport debug $(mb "$work/bportdbg") MB|$work/bportdbg|-V;glob_match"
    "bport debug $(mb "$work/bportdbg") MB|$work/bportdbg|-F"
    "C++ -O1 $(mb "$work/cxx") MB|$work/cxx|-n;main"
    "C++ -O1 $(mb "$work/cxx") MB|$work/cxx|-n;work n"
    "C++ -O1 $(mb "$work/cxx") MB|$work/cxx|-L;main"
    "C++ -O1 $(mb "$work/cxx") MB|$work/cxx|-V;work"
)

# Wall and CPU (user + system) milliseconds of one run, as "wall,cpu". bport walks units on up to 4 threads,
# perf on one, so the CPU column says what the wall column gains from the second core.
ms() {
    /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1 || true
    awk '{printf "%d,%d\n", $1 * 1000, ($2 + $3) * 1000}' "$work/time"
}
best() { tr ' ' '\n' | grep . | cut -d, -f"$1" | sort -n | head -1; }

printf '%-20s %-28s %14s %14s %10s  %s\n' binary case "perf ms (cpu)" "bport ms (cpu)" perf/bport output
for c in "${cases[@]}"; do
    IFS='|' read -r name bin args <<<"$c"
    IFS=';' read -r -a a <<<"$args"
    if [[ ${a[0]} == -n ]]; then
        want=$("$perf" probe -v -x "$bin" "${a[@]}" 2>&1 | sed -n 's/^Writing event: //p')
    else
        want=$("$perf" probe -x "$bin" "${a[@]}" 2>&1)
    fi
    got=$("$BPORT" probe -x "$bin" "${a[@]}" 2>&1 || true)
    same=differs
    [[ $want == "$got" ]] && same=same
    tp="" tb=""
    for ((r = 0; r < runs; r++)); do
        tp+="$(ms "$perf" probe -x "$bin" "${a[@]}") "
        tb+="$(ms "$BPORT" probe -x "$bin" "${a[@]}") "
    done
    p=$(best 1 <<<"$tp") pc=$(best 2 <<<"$tp")
    b=$(best 1 <<<"$tb") bc=$(best 2 <<<"$tb")
    printf '%-20s %-28s %7d (%4d) %7d (%4d) %9.2fx  %s\n' "$name" "${a[*]}" "$p" "$pc" "$b" "$bc" \
        "$(echo "$p / $b" | bc -l)" "$same"
done
