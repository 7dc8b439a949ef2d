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
3. Many clients, one replica with a long queue (issue R3): 1,000 concurrent completions through the proxy to one
   replica started with --max-queue 2048, HAProxy's --server-maxconn 600 (over the replicas' former per-address cap
   of 512) and --max-connections-per-client 1000: every answer is 200 or the replica's own 429, none a 503; HAProxy
   queued what was over the server's maxconn and the replica held more than 512 of the proxy's connections at once.
4. The per-client cap is HAProxy's: with --max-connections-per-client 20, one client opening 30 connections gets 20
   answered and 10 closed by HAProxy at accept (its frontend's denied-connection count is 10, no HTTP answer on
   them), while another client address is answered meanwhile and the capped client is answered again once its
   connections close.
Exit 0 pass, 1 fail, 77 skipped (no haproxy or model; under CI a missing input fails)."""
import asyncio
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

    def __init__(self, binary, model, policy, replicas=3, options=(), serve_args=SERVE_ARGS):
        self.dir = tempfile.mkdtemp(prefix="slimkv-replicas-test-")
        ready = os.path.join(self.dir, "ready.json")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "scripts", "replicas"), "--replicas", str(replicas), "--port", "0",
             "--policy", policy, "--duration", "300", "--binary", binary, "--model", model, "--ready-file", ready]
            + list(options) + ["--"] + list(serve_args),
            stdout=open(os.path.join(self.dir, "out.log"), "wb"), stderr=subprocess.STDOUT)
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


def haproxy_command(sock_path, command):
    """One command on HAProxy's stats socket; its whole answer."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock_path)
    s.sendall(command.encode() + b"\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return data.decode()


def haproxy_stat(sock_path, proxy, name):
    """The `show stat` row of `name` (a server, FRONTEND or BACKEND) in `proxy`, as a dict ({} if none)."""
    lines = haproxy_command(sock_path, "show stat").splitlines()
    cols = lines[0].lstrip("# ").split(",")
    for line in lines[1:]:
        row = dict(zip(cols, line.split(",")))
        if row.get("pxname") == proxy and row.get("svname") == name:
            return row
    return {}


def haproxy_status(sock_path, backend, server):
    return haproxy_stat(sock_path, backend, server).get("status", "")


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


def raw_request(body):
    payload = json.dumps(body).encode()
    return (b"POST /v1/completions HTTP/1.1\r\nHost: slimkv\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)


def answer_of(data):
    """(status, body) of a whole HTTP/1.1 answer read until the server closed; (0, b"") for no answer at all."""
    if not data.startswith(b"HTTP/1."):
        return 0, b""
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def open_all_then_send(port, n, body, timeout_s):
    """n connections opened at once; once every one is open, each sends one request (Connection: close) and reads
    its answer. Returns each one's status (0: no HTTP answer) and a body sample per status."""
    opened, go = [0], asyncio.Event()
    request = raw_request(body)

    async def one():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError as e:
            opened[0] += 1
            if opened[0] == n:
                go.set()
            return 0, f"connect: {e}".encode()
        opened[0] += 1
        if opened[0] == n:
            go.set()
        await go.wait()
        try:
            writer.write(request)
            await writer.drain()
            data = await reader.read()
        except OSError as e:
            return 0, f"connection: {type(e).__name__}".encode()
        finally:
            writer.close()
        return answer_of(data)

    return await asyncio.wait_for(asyncio.gather(*(one() for _ in range(n))), timeout_s)


def many_clients_one_replica(binary, model, failures):
    """Issue R3: 1,000 concurrent completions through HAProxy to one replica with a long queue."""
    n, server_maxconn = 1000, 600
    group = Group(binary, model, "leastconn", replicas=1,
                  options=["--max-connections-per-client", str(n), "--server-maxconn", str(server_maxconn)],
                  serve_args=SERVE_ARGS + ["--max-queue", "2048"])
    try:
        replica = group.info["replicas"][0]
        before = metrics(replica["port"])
        t0 = time.time()
        body = {"prompt": "Once upon a time", "max_tokens": 16, "ignore_eos": True, "temperature": 0}
        answers = asyncio.run(open_all_then_send(group.port, n, body, 120))
        took = time.time() - t0
        counts = {}
        for status, _ in answers:
            counts[status] = counts.get(status, 0) + 1
        print(f"{n} concurrent through HAProxy to one replica: "
              + ", ".join(f"{c} x {s if s else 'no answer'}" for s, c in sorted(counts.items()))
              + f"; took {took:.1f} s")
        for status, body in answers:
            if status not in (200, 429):
                failures.append(f"{n} concurrent: an answer {status or 'missing'}: {body[:300]!r}")
                break
            if status == 200 and b'"finish_reason"' not in body:
                failures.append(f"{n} concurrent: a 200 without a finish reason: {body[:300]!r}")
                break
        if counts.get(200, 0) + counts.get(429, 0) != n:
            failures.append(f"{n} concurrent: {counts}")
        sock = group.info["stats_socket"]
        backend = haproxy_stat(sock, "slimkv_leastconn", "BACKEND")
        server = haproxy_stat(sock, "slimkv_leastconn", replica["name"])
        frontend = haproxy_stat(sock, "slimkv", "FRONTEND")
        print(f"HAProxy: queued at most {backend.get('qmax')} (timeout queue live), at most {server.get('smax')} open "
              f"on the replica (maxconn {server_maxconn}), {frontend.get('dcon')} connections denied")
        if int(backend.get("qmax") or 0) < 1:
            failures.append(f"HAProxy queued nothing (qmax {backend.get('qmax')!r}): its maxconn did not apply")
        # HAProxy's own count overshoots a server's maxconn now and then in a burst (haproxy/haproxy#2744, "sessions
        # cur > limit"; measured 601 of 600 once, on a 2-vCPU Zen 3 under load): up to 1% over is HAProxy's, not the
        # cap failing to apply.
        smax, slack = int(server.get("smax") or 0), server_maxconn // 100
        if not 512 < smax <= server_maxconn + slack:
            failures.append(f"the replica held at most {smax} of HAProxy's requests, not in "
                            f"513..{server_maxconn + slack}")
        if frontend.get("dcon") != "0":
            failures.append(f"HAProxy's frontend denied {frontend.get('dcon')} connections under its per-client cap")
        m = metrics(replica["port"])
        finished = m["request_success_total"] - before["request_success_total"]
        if finished != counts.get(200, 0):
            failures.append(f"the replica counts {finished:.0f} finished, the clients got {counts.get(200, 0)} x 200")
        for gauge in ("num_requests_running", "num_requests_waiting"):
            if m[gauge] != 0:
                failures.append(f"the replica's {gauge} = {m[gauge]} after the load")
    finally:
        rc = group.stop()
        if rc != 0:
            failures.append(f"scripts/replicas exited {rc}")


def per_client_cap(binary, model, failures):
    """One client address over HAProxy's per-client cap: the excess connections are closed at accept (by HAProxy,
    not a replica); the rest, and other clients, are answered."""
    cap, n = 20, 30
    group = Group(binary, model, "leastconn", replicas=1, options=["--max-connections-per-client", str(cap)])
    body = {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}
    socks = []
    try:
        sock_path = group.info["stats_socket"]
        for _ in range(n):
            try:
                socks.append(socket.create_connection(("127.0.0.1", group.port), timeout=30))
            except ConnectionResetError:  # HAProxy's reset can beat connect()'s return: refused all the same
                socks.append(None)
        deadline = time.time() + 10
        while time.time() < deadline:
            denied = int(haproxy_stat(sock_path, "slimkv", "FRONTEND").get("dcon") or 0)
            table = haproxy_command(sock_path, "show table slimkv")
            if denied >= n - cap:
                break
            time.sleep(0.05)
        held = re.search(r"key=::ffff:127\.0\.0\.1 .*conn_cur=(\d+)", table)
        print(f"one client opened {n} connections under a cap of {cap}: HAProxy denied {denied}, its table holds "
              f"conn_cur={held.group(1) if held else None} for 127.0.0.1")
        if denied != n - cap:
            failures.append(f"HAProxy denied {denied} of {n} connections from one client, not {n - cap}")
        if not held or int(held.group(1)) != cap:
            failures.append(f"HAProxy's stick table for 127.0.0.1 is not at conn_cur={cap}: {table!r}")
        # Another client address is answered while 127.0.0.1 holds its whole share.
        other = http.client.HTTPConnection("127.0.0.1", group.port, timeout=30, source_address=("127.0.0.2", 0))
        other.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        other_status = other.getresponse().status
        other.close()

        def use(s):
            if s is None:
                return 0
            try:
                s.sendall(raw_request(body))
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
            except OSError:
                data = b""
            finally:
                s.close()
            return answer_of(data)[0]

        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            statuses = list(ex.map(use, socks))
        answered, refused = statuses.count(200), statuses.count(0)
        print(f"the {n} connections: {answered} x 200, {refused} closed without an answer, "
              f"{n - answered - refused} other ({sorted(set(statuses))}); "
              f"another client (127.0.0.2) got {other_status}")
        if answered != cap or refused != n - cap:
            failures.append(f"one client over the cap: {answered} answered, {refused} refused, statuses {statuses}")
        if other_status != 200:
            failures.append(f"another client got {other_status} while 127.0.0.1 held its {cap} connections")
        status, _, outcome, _ = complete(group.port, body)
        if outcome != "ok":
            failures.append(f"127.0.0.1 is still refused after closing its connections: {outcome}")
    finally:
        for s in socks:
            if s is not None:
                s.close()
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
    many_clients_one_replica(binary, model, failures)
    per_client_cap(binary, model, failures)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
