#!/usr/bin/env python3
"""Per-request CPU cost of serving, split between govdata and the database (issue 31, item 6).

The capacity model (docs/replicas-and-capacity.md) reads its per-core figures from this: one govdata process on
DATABASE_URL (a store written by `govdata synth`), driven by wrk on

  - the cached path: /v1/daos with the response cache on (no database read per request);
  - the uncached path: a 100-vote page of the busiest proposal with the response cache off;

for SECS s each after a 3 s warm-up. For each it prints req/s and the CPU time per request of the
govdata process (/proc/PID/stat), of wrk (its own children's rusage), and of everything else on the
machine (/proc/stat less those two), which is the database on an otherwise idle machine.

    cargo build --release --bin govdata
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/govdata_bench python3 scripts/bench-capacity.py

Everything listens on 127.0.0.1; the server is started and stopped here by its own PID."""
import argparse, importlib.util, os, re, resource, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_replicas", os.path.join(HERE, "bench-replicas.py"))
replicas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replicas)

SECS = 20
TICK = os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """Seconds of CPU the whole machine spent (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:3]) + sum(fields[5:8])) / TICK


def process_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        after_name = f.read().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / TICK


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(url, secs, pid):
    subprocess.run(["wrk", "-t2", "-c64", "-d3s", "-H", f"x-internal-token: {replicas.INTERNAL}", url],
                   capture_output=True, check=True)
    before = (machine_cpu(), process_cpu(pid), children_cpu())
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{secs}s", "-H", f"x-internal-token: {replicas.INTERNAL}", url],
                         capture_output=True, text=True, check=True).stdout
    after = (machine_cpu(), process_cpu(pid), children_cpu())
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    assert not m, f"non-2xx answers: {out}"
    total, app, load = (a - b for a, b in zip(after, before))
    n = rps * secs
    rest = total - app - load
    return rps, app / n * 1000, rest / n * 1000, load / n * 1000, total / secs


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--govdata", default="target/release/govdata")
    a.add_argument("--secs", type=int, default=SECS)
    args = a.parse_args()
    url = os.environ.get("DATABASE_URL") or sys.exit("DATABASE_URL names the synth store")
    os.makedirs(replicas.WORK, exist_ok=True)
    # bench-replicas starts its servers on its pair; here the store is DATABASE_URL's.
    replicas.PRIMARY, replicas.DB = url.rsplit("/", 1)
    print(f"{os.cpu_count()} cores; store {url}")
    print("| path | req/s | govdata CPU ms/request | database (rest of the machine) ms/request | wrk ms/request | cores busy |")
    print("|---|---|---|---|---|---|")
    for name, cache_mb in (("cached /v1/daos", 64), ("uncached 100-vote page", 0)):
        p, base = replicas.start(args.govdata, False, cache_mb, f"capacity-{cache_mb}")
        path = "/v1/daos" if cache_mb else f"/v2/proposals/{replicas.busiest(base)}/votes?limit=100"
        rps, app, db, load, busy = run(base + path, args.secs, p.pid)
        print(f"| {name} | {rps:,.0f} | {app:.3f} | {db:.3f} | {load:.3f} | {busy:.2f} |")
        p.kill()
        p.wait()
        time.sleep(1)


if __name__ == "__main__":
    main()
