#!/usr/bin/env python3
"""Serving from a PostgreSQL streaming replica, measured on this machine (issue 31).

  1. req/s of one govdata process on the primary against two processes reading from one replica,
     on the cached path (/v1/daos, response cache on) and the uncached one (a 100-vote page of the
     busiest proposal, response cache off): wrk -t2 -c64 on the one, two wrk -t1 -c32 (one per
     process, at once) on the two; median of RUNS runs of SECS s after a 3 s warm-up.
  2. Replica lag during an ingestion of 100,000 votes (`govdata synth --dao bulk --votes 100000`,
     one publication): `storeNodes` of /v1/system/freshness sampled every 20 ms.
  3. From a publication's commit until every process serves the new revision: a small synthetic DAO
     is published PUBLICATIONS times; each process's /v1/system/freshness is polled every 2 ms.

Run from the project root after `cargo build --release`, with the pair of `scripts/pg-pair`:
    bash scripts/pg-pair start
    python3 scripts/bench-replicas.py [--govdata target/release/govdata] [--votes 1000000]

Everything listens on 127.0.0.1; the servers are started and stopped here by their own PIDs. On one
2-core machine the primary, the replica, both servers and wrk share the same two cores: the ratios
show what reading from a replica costs or saves here, not what a replica on its own machine adds."""
import argparse, atexit, json, os, re, statistics, subprocess, sys, time, urllib.request

PRIMARY = "postgres://postgres@127.0.0.1:5433"
REPLICA = "postgres://postgres@127.0.0.1:5434"
DB = "govdata_replica_bench"
WORK = "/tmp/govdata-replica-bench"
RUNS, SECS, PUBLICATIONS = 3, 10, 10
INTERNAL = "bench-internal-token"
STARTED = []
# Every server started here is stopped however the run ends.
atexit.register(lambda: [p.kill() for p in STARTED if p.poll() is None])


def psql(sql, db="postgres"):
    subprocess.run(["psql", "-h", "127.0.0.1", "-p", "5433", "-U", "postgres", "-d", db, "-qAtc", sql], check=True,
                   capture_output=True)


def get(url, timeout=10):
    req = urllib.request.Request(url, headers={"x-internal-token": INTERNAL})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(gov, replicas, cache_mb, tag):
    port = free_port()
    env = dict(os.environ, DATABASE_URL=f"{PRIMARY}/{DB}", GOVDATA_ADDR=f"127.0.0.1:{port}", GOVDATA_NO_SAMPLE="1",
               GOVDATA_RESPONSE_CACHE_MB=str(cache_mb), GOVDATA_RATE_CLIENT="off", GOVDATA_RATE_PARTNER="off",
               GOVDATA_INTERNAL_TOKEN=INTERNAL, GOVDATA_EXPORT_DIR=os.path.join(WORK, f"exports-{tag}"),
               GOVDATA_READ_REPLICA_URLS=f"{REPLICA}/{DB}" if replicas else "", RUST_LOG="warn")
    log = open(os.path.join(WORK, f"govdata-{tag}.log"), "w")
    p = subprocess.Popen([gov, "serve"], env=env, stdout=log, stderr=log)
    STARTED.append(p)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/readyz", timeout=1)
            return p, base
        except Exception:
            time.sleep(0.1)
    p.kill()
    sys.exit(f"govdata did not start; see {WORK}/govdata-{tag}.log")


def wrk(urls, secs):
    """Runs one wrk per URL at once (threads and connections split between them); total req/s."""
    threads, conns = (2, 64) if len(urls) == 1 else (1, 32)
    procs = [subprocess.Popen(["wrk", f"-t{threads}", f"-c{conns}", f"-d{secs}s", "-H", f"x-internal-token: {INTERNAL}",
                               u], stdout=subprocess.PIPE, text=True) for u in urls]
    total, errors = 0.0, 0
    for p in procs:
        out = p.communicate(timeout=secs + 30)[0]
        total += float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        errors += int(m.group(1)) if m else 0
    return total, errors


def measure(urls, quick):
    wrk(urls, 3)
    runs = [wrk(urls, 5 if quick else SECS) for _ in range(RUNS)]
    assert all(e == 0 for _, e in runs), f"non-2xx answers: {runs}"
    return statistics.median(r for r, _ in runs)


def busiest(base):
    """The key of the synthetic DAO's proposal with the most votes."""
    best, path = (0, None), "/v2/proposals?daoId=synthetic&limit=100"
    while path:
        page = get(base + path)
        for p in page["data"]["items"]:
            best = max(best, (int(p["votes"]["ingested"]), p["proposalKey"]))
        cursor = page.get("meta", {}).get("page", {}).get("nextCursor")
        path = f"/v2/proposals?daoId=synthetic&limit=100&cursor={cursor}" if cursor else None
    return best[1]


def reads(base):
    nodes = get(base + "/v1/system/freshness")["data"]["storeNodes"]
    return {n["name"]: n for n in nodes}


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--govdata", default="target/release/govdata")
    a.add_argument("--votes", type=int, default=1_000_000)
    a.add_argument("--quick", action="store_true")
    a = a.parse_args()
    gov = os.path.abspath(a.govdata)
    os.makedirs(WORK, exist_ok=True)
    subprocess.run(["bash", "scripts/pg-pair", "start"], check=True)
    psql(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    psql(f'CREATE DATABASE "{DB}"')
    t = time.time()
    env = dict(os.environ, DATABASE_URL=f"{PRIMARY}/{DB}")
    subprocess.run([gov, "synth", "--votes", str(a.votes), "--voters", str(max(a.votes // 10, 1000)), "--proposals",
                    "200"], env=env, check=True, capture_output=True)
    print(f"store: {a.votes:,} synthetic votes on the primary in {time.time() - t:.0f} s")
    results = {}

    # 1. One process on the primary against two on the replica.
    for cache_mb, label in ((64, "cached /v1/daos"), (0, "uncached votes page")):
        one, base = start(gov, False, cache_mb, f"primary-{cache_mb}")
        key = busiest(base) if cache_mb == 0 else None
        path = "/v1/daos" if cache_mb else f"/v2/proposals/{key}/votes?limit=100"
        results[f"{label}: one process, primary"] = measure([base + path], a.quick)
        one.terminate(), one.wait()
        two = [start(gov, True, cache_mb, f"replica-{cache_mb}-{i}") for i in range(2)]
        time.sleep(1)
        before = [reads(b)["replica-1"]["state"] for _, b in two]
        assert before == ["serving", "serving"], before
        results[f"{label}: two processes, replica"] = measure([b + path for _, b in two], a.quick)
        for p, _ in two:
            p.terminate(), p.wait()
        print(f"  {label}: one on the primary {results[f'{label}: one process, primary']:,.0f} req/s, "
              f"two on the replica {results[f'{label}: two processes, replica']:,.0f} req/s "
              f"(ratio {results[f'{label}: two processes, replica'] / results[f'{label}: one process, primary']:.2f})")

    # 2. Lag during an ingestion of 100,000 votes; 3. commit to served, with two processes.
    two = [start(gov, True, 64, f"follow-{i}") for i in range(2)]
    samples = []
    writer = subprocess.Popen([gov, "synth", "--dao", "bulk", "--votes", "100000", "--voters", "20000", "--proposals",
                               "20"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = time.time()
    while writer.poll() is None or time.time() - t < writer_done_grace(writer, t):
        n = reads(two[0][1])["replica-1"]
        samples.append((float(n["lagSeconds"]), int(n["lagBytes"]), n["state"]))
        time.sleep(0.02)
    took = time.time() - t
    lags = sorted(s[0] for s in samples)
    print(f"  ingestion of 100,000 votes ({took:.1f} s, one publication): replica lag max {lags[-1]:.3f} s, "
          f"p50 {lags[len(lags) // 2]:.3f} s, max {max(s[1] for s in samples):,} bytes behind, "
          f"{sum(1 for s in samples if s[2] != 'serving')} of {len(samples)} samples not serving")
    results["ingestion lag max s"] = lags[-1]

    served_after, replica_after = [], []
    for i in range(PUBLICATIONS):
        old = get(two[0][1] + "/v1/system/freshness")["data"]["revision"]["id"]
        w = subprocess.run([gov, "synth", "--dao", f"tiny-{i}-{int(time.time())}", "--votes", "100", "--voters",
                            "50", "--proposals", "2"], env=env, capture_output=True)
        done = time.time()
        assert w.returncode == 0, w.stderr
        seen = {}
        while len(seen) < 4 and time.time() - done < 10:
            for j, (_, b) in enumerate(two):
                f = get(b + "/v1/system/freshness")["data"]
                if j not in seen and f["revision"]["id"] != old:
                    seen[j] = time.time() - done
                nodes = {n["name"]: n for n in f["storeNodes"]}
                if 2 + j not in seen and nodes["replica-1"]["revision"] != old and f["revision"]["id"] != old:
                    seen[2 + j] = time.time() - done
            time.sleep(0.002)
        served_after.append(max(seen.get(0, 10), seen.get(1, 10)))
        replica_after.append(max(seen.get(2, 10), seen.get(3, 10)))
    print(f"  publication → every process serves it: median {statistics.median(served_after) * 1000:.0f} ms, "
          f"max {max(served_after) * 1000:.0f} ms after the writer's process exited; its reads back on the replica: "
          f"median {statistics.median(replica_after) * 1000:.0f} ms, max {max(replica_after) * 1000:.0f} ms "
          f"({PUBLICATIONS} publications)")
    for p, _ in two:
        p.terminate(), p.wait()
    json.dump(results, open(os.path.join(WORK, "results.json"), "w"), indent=1)


def writer_done_grace(writer, t):
    """Keep sampling a second past the writer's end, to see the replica catch up."""
    if writer.poll() is None:
        return float("inf")
    if not hasattr(writer, "ended"):
        writer.ended = time.time() - t
    return writer.ended + 1.0


if __name__ == "__main__":
    main()
