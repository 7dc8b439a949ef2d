#!/usr/bin/env python3
"""Replicas behind a real HAProxy (issue S §3): scripts/replicas starts 3 `slimkv serve` replicas on loopback and
HAProxy in front (deploy/haproxy/slimkv.cfg.in). Usage: replicas_test.py SLIMKV_BINARY MODEL

1. Prefix affinity: the same multi-turn workload (12 conversations x 4 turns, each turn's prompt = the last one +
   its reply + a new message, X-Session-Id per conversation) under `--policy affinity` and `--policy roundrobin`;
   the prefix-cache hit rate (hits / queried tokens, summed over the replicas' own /metrics) with affinity must be
   >= 1.5x round-robin's.
2. A replica killed (SIGKILL) while it runs requests, under load (streamed and not): every request ends within its
   deadline (nothing hangs); each either completes (a finish reason; streams end with [DONE]) or fails (a 5xx, or
   a stream cut before [DONE]) -- and only requests that had reached the killed replica fail: every request sent
   once its port refuses connections completes elsewhere (HAProxy retries what never reached a replica). HAProxy marks it DOWN;
   on each survivor, finished requests counted by its /metrics equal the completions the clients got from it, and
   nothing is left running, waiting or holding KV blocks.
Exit 0 pass, 1 fail, 77 skipped (no haproxy or model; under CI a missing input fails)."""
import concurrent.futures
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = ("once upon a time there was a little girl named lily she liked to play with her ball in the park one day "
         "the sun was hot and big dog came to see what they were doing tom said hello mom happy").split()
SERVE_ARGS = ["--kv-cache-memory", "0.05", "--max-num-seqs", "16"]


def missing(what):
    print(f"{'FAIL' if os.environ.get('CI') else 'SKIP'}: {what}")
    return 1 if os.environ.get("CI") else 77


class Group:
    """scripts/replicas running in the background; its ready file read once it is up."""

    def __init__(self, binary, model, policy, replicas=3):
        self.dir = tempfile.mkdtemp(prefix="slimkv-replicas-test-")
        ready = os.path.join(self.dir, "ready.json")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "scripts", "replicas"), "--replicas", str(replicas), "--port", "0",
             "--policy", policy, "--duration", "300", "--binary", binary, "--model", model, "--ready-file", ready,
             "--"] + SERVE_ARGS, stdout=open(os.path.join(self.dir, "out.log"), "wb"), stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("scripts/replicas did not come up: " + open(os.path.join(self.dir, "out.log")).read())
            time.sleep(0.1)
        self.info = json.load(open(ready))
        self.port = int(self.info["url"].rsplit(":", 1)[1])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise RuntimeError("scripts/replicas did not stop within 60 s")
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


def metrics(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    out = {}
    for m in re.finditer(r"^slimkv:(\w+)(\{[^}]*\})? (\S+)$", text, re.M):
        key = m.group(1)
        if key == "request_success_total":
            out[key] = out.get(key, 0.0) + float(m.group(3))  # summed over finish reasons
        elif key not in out:
            out[key] = float(m.group(3))
    return out


def complete(port, body, session=None, timeout_s=60):
    """One request through HAProxy: (status, replica, outcome) with outcome "ok" or the reason it failed."""
    headers = {"Content-Type": "application/json"}
    if session:
        headers["X-Session-Id"] = session
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
        conn.request("POST", "/v1/completions", json.dumps(body), headers)
        r = conn.getresponse()
        replica = r.getheader("X-Slimkv-Replica", "")
        raw = r.read().decode(errors="replace")
        conn.close()
    except (OSError, http.client.HTTPException) as e:
        return 0, "", f"connection: {type(e).__name__}", ""
    if r.status != 200:
        return r.status, replica, f"status {r.status}", ""
    if body.get("stream"):
        if "data: [DONE]" not in raw:
            return r.status, replica, "stream cut before [DONE]", ""
        text, finish = "", None
        for line in raw.splitlines():
            if line.startswith("data: {"):
                choice = json.loads(line[6:])["choices"][0]
                text += choice.get("text", "")
                finish = choice.get("finish_reason") or finish
        return r.status, replica, "ok" if finish else "no finish reason", text
    choice = json.loads(raw)["choices"][0]
    return r.status, replica, "ok" if choice.get("finish_reason") else "no finish reason", choice["text"]


def conversation(port, sid, turns):
    rng = random.Random(sid)
    prompt = " ".join(rng.choice(WORDS) for _ in range(70))  # this conversation's own "system prompt"
    for _ in range(turns):
        prompt += " " + " ".join(rng.choice(WORDS) for _ in range(12))
        status, _, outcome, text = complete(port, {"prompt": prompt, "max_tokens": 16, "temperature": 0},
                                            session=f"conv-{sid}")
        if outcome != "ok":
            raise RuntimeError(f"conversation {sid}: {outcome}")
        prompt += text


def hit_rate(binary, model, policy):
    group = Group(binary, model, policy)
    try:
        ports = [r["port"] for r in group.info["replicas"]]
        before = [metrics(p) for p in ports]
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            list(ex.map(lambda sid: conversation(group.port, sid, 4), range(12)))
        after = [metrics(p) for p in ports]
    finally:
        group.stop()
    hits = sum(a["prefix_cache_hits_total"] - b["prefix_cache_hits_total"] for a, b in zip(after, before))
    queries = sum(a["prefix_cache_queries_total"] - b["prefix_cache_queries_total"] for a, b in zip(after, before))
    return hits / queries if queries else 0.0


def haproxy_status(sock_path, backend, server):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock_path)
    s.sendall(b"show stat\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    lines = data.decode().splitlines()
    cols = lines[0].lstrip("# ").split(",")
    for line in lines[1:]:
        row = dict(zip(cols, line.split(",")))
        if row.get("pxname") == backend and row.get("svname") == server:
            return row.get("status", "")
    return ""


def kill_under_load(binary, model, failures):
    group = Group(binary, model, "affinity")
    try:
        replicas = group.info["replicas"]
        victim, survivors = replicas[0], replicas[1:]
        before = {r["name"]: metrics(r["port"]) for r in survivors}
        results, lock, stop_sending = [], threading.Lock(), threading.Event()
        kill_time = [None]

        def worker(w):
            rng = random.Random(w)
            while not stop_sending.is_set():
                body = {"prompt": " ".join(rng.choice(WORDS) for _ in range(20)), "temperature": 0,
                        "max_tokens": 200, "ignore_eos": True, "stream": rng.random() < 0.5}
                t0 = time.time()
                status, replica, outcome, _ = complete(group.port, body, session=f"s{rng.randrange(1000)}")
                with lock:
                    results.append({"t0": t0, "t1": time.time(), "replica": replica, "outcome": outcome})

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            futures = [ex.submit(worker, w) for w in range(8)]
            deadline = time.time() + 30
            while time.time() < deadline and metrics(victim["port"]).get("num_requests_running", 0) < 1:
                time.sleep(0.01)
            os.kill(victim["pid"], signal.SIGKILL)
            # The kill counts from when the port refuses connections: until the process is gone, HAProxy's
            # connections still land in its listen backlog (the request reached it, and fails like those running).
            while True:
                try:
                    socket.create_connection(("127.0.0.1", victim["port"]), timeout=1).close()
                    time.sleep(0.001)
                except OSError:
                    break
            kill_time[0] = time.time()
            time.sleep(4)  # load goes on: HAProxy finds the replica gone (checks every 1 s, 2 failures)
            stop_sending.set()
            done, pending = concurrent.futures.wait(futures, timeout=90)
            if pending:
                failures.append(f"{len(pending)} clients still waiting 90 s after the load stopped (a hang)")
                return
        kt = kill_time[0]
        failed = [r for r in results if r["outcome"] != "ok"]
        ok = [r for r in results if r["outcome"] == "ok"]
        after_kill = [r for r in results if r["t0"] > kt + 0.05]
        print(f"kill: {len(results)} requests, {len(ok)} completed, {len(failed)} failed "
              f"({sorted(set(r['outcome'] for r in failed))}); {len(after_kill)} sent after the kill")
        if not failed:
            failures.append("no request failed: the killed replica was running none (the test proves nothing)")
        for r in failed:
            if r["t0"] > kt:
                failures.append(f"a request sent after the kill failed: {r}")
            elif r["replica"] not in ("", victim["name"]):
                failures.append(f"a request on a surviving replica failed: {r}")
        if len(after_kill) < 8:
            failures.append(f"only {len(after_kill)} requests were sent after the kill")
        status = haproxy_status(group.info["stats_socket"], "slimkv_affinity", victim["name"])
        if not status.startswith("DOWN"):
            failures.append(f"HAProxy shows the killed replica as {status!r}, not DOWN")
        for r in survivors:
            m = metrics(r["port"])
            served = sum(1 for x in ok if x["replica"] == r["name"])
            counted = m["request_success_total"] - before[r["name"]]["request_success_total"]
            print(f"{r['name']}: clients got {served} completions, its /metrics counts {counted:.0f} finished")
            if counted != served:
                failures.append(f"{r['name']}: {counted:.0f} finished by its metrics, {served} completions seen")
            for gauge in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"):
                if m[gauge] != 0:
                    failures.append(f"{r['name']}: {gauge} = {m[gauge]} after the load")
    finally:
        rc = group.stop()
        if rc != 0:
            failures.append(f"scripts/replicas exited {rc}")


def main():
    binary, model = sys.argv[1:3]
    if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):  # a PATH without /usr/sbin
        return missing("no haproxy (Debian: apt-get install haproxy; scripts/setup installs it)")
    if not os.path.exists(model):
        return missing(f"{model} not found")
    failures = []
    affinity = hit_rate(binary, model, "affinity")
    roundrobin = hit_rate(binary, model, "roundrobin")
    print(f"prefix-cache hit rate: affinity {affinity:.3f}, round-robin {roundrobin:.3f}, "
          f"ratio {affinity / max(roundrobin, 1e-9):.2f}x")
    if affinity < 1.5 * roundrobin or affinity <= 0:
        failures.append(f"affinity's hit rate {affinity:.3f} is not >= 1.5x round-robin's {roundrobin:.3f}")
    kill_under_load(binary, model, failures)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
