#!/usr/bin/env python3
"""`slimkv serve` under `mpirun -np 2 --tensor-parallel-size 2` against one process (issue S): usage
serve_tp_test.py SLIMKV_BINARY MODEL

Rank 0 serves HTTP and broadcasts each step's batch; rank 1 runs its slice. The server suite's core cases on both
servers: greedy completions (plain and streamed), a chat completion, top-k and top-p sampling with a seed and
greedy logprobs equal to one process's; 8 concurrent
requests in a pool small enough to preempt (every one finishes with one process's text, and the parallel server
did preempt); dynamic retention with merges (rank 0's merges replayed on rank 1) equal to one process; speculative
decoding (rank 0 proposes and verifies, verify chunks wider than a plain step) equal to one process; a stream
the client drops mid-way (the server goes on, nothing left running); SIGTERM to rank 0 (it
drains, tells rank 1 to stop; the job exits 0 within 30 s); the KV disk tier (issue T: each rank keeps its own
heads' blocks, rank 0 decides, the others follow) in a pool too small for the prompts: greedy text equal to one
process, blocks restored, and after a restart (SIGTERM: every rank saves its part) a hit with the same text; with
rank 1's files deleted, rank 0's reads are forgotten (rank 1 says it could not) and the text is still the same.
Exit 0 pass, 1 fail, 77 skipped (no mpirun; under CI a failure)."""
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ENV = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")
PROMPTS = ["Once upon a time", "The little dog", "Lily and Tom went to the park", "One day, a big bird"]
# A pool of 0.0004 GiB: 83 blocks of 8 tokens per rank at T = 2 (each rank holds half the heads), 41 on one process.
SERVE = ["--threads", "1", "--kv-cache-memory", "0.0004", "--max-model-len", "256", "--max-num-seqs", "8"]


class Server:
    def __init__(self, cmd, log):
        self.log_path = log
        self.proc = subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=ENV)
        deadline = time.time() + 60
        self.port = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {open(log).read()[-1500:]}")
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(log, errors="replace").read())
            if m and "ready:" in open(log, errors="replace").read():
                self.port = int(m.group(1))
                return
            time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError("server did not start: " + open(log).read()[-1500:])

    def post(self, path, body, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        raw = r.read().decode()
        conn.close()
        return r.status, raw

    def metrics(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        out = {}
        for m in re.finditer(r"^slimkv:(\w+)\{[^}]*\} (\S+)$", text, re.M):
            out.setdefault(m.group(1), float(m.group(2)))
        return out


def complete(s, prompt, max_tokens=40, stream=False):
    status, raw = s.post("/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                             "stream": stream})
    if status != 200:
        return f"status {status}: {raw[:200]}"
    if not stream:
        return json.loads(raw)["choices"][0]["text"]
    if "data: [DONE]" not in raw:
        return "stream without [DONE]"
    return "".join(json.loads(l[6:])["choices"][0].get("text", "") for l in raw.splitlines() if l.startswith("data: {"))


def chat(s):
    status, raw = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Tell me a story"}],
                                                  "max_tokens": 24, "temperature": 0})
    return json.loads(raw)["choices"][0]["message"]["content"] if status == 200 else f"status {status}"


# Sampling through the vocabulary-parallel head: top-k sampling and greedy read only each row's top candidates (the
# ranks exchange those, not whole rows); top-p without top-k and logprobs read whole rows. Each equal to one process.
SAMPLED = [{"temperature": 0.9, "top_k": 20, "seed": 7}, {"temperature": 0.9, "top_p": 0.9, "seed": 7},
           {"temperature": 0, "logprobs": 3}]


def sampled(s, params):
    status, raw = s.post("/v1/completions", dict({"prompt": PROMPTS[1], "max_tokens": 32}, **params))
    if status != 200:
        return f"status {status}: {raw[:200]}"
    choice = json.loads(raw)["choices"][0]
    lp = choice.get("logprobs") or {}
    return choice["text"], lp.get("tokens"), lp.get("token_logprobs") or []


def drop_stream(s):
    """Starts a long stream, reads a few chunks, hangs up."""
    sock = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    sock.request("POST", "/v1/completions", json.dumps({"prompt": "Once", "max_tokens": 200, "ignore_eos": True,
                                                       "stream": True}), {"Content-Type": "application/json"})
    r = sock.getresponse()
    r.read1(64)
    sock.close()


def check_retention(binary, model, tmp, failures):
    """Dynamic retention with merges under -np 2: rank 0 decides from the attention mass summed over both ranks'
    heads and sends each merge with the next step; rank 1 applies it to its heads. Greedy completions long enough
    to evict must equal one process's, and the parallel server must have evicted."""
    config = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs",
                          "dynamic-k128-w64-merge.json")
    flags = SERVE + ["--kv-config", config]
    one = Server([binary, "serve", "-m", model, "--port", "0"] + flags, os.path.join(tmp, "one-r.log"))
    tp = Server(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", binary, "serve", "-m", model,
                 "--port", "0", "--tensor-parallel-size", "2"] + flags, os.path.join(tmp, "tp-r.log"))
    try:
        same = sum(complete(one, p, max_tokens=200) == complete(tp, p, max_tokens=200) for p in PROMPTS)
        evicted = tp.metrics().get("kv_cache_evicted_tokens_total", 0)
        print(f"dynamic retention (merge): {same}/{len(PROMPTS)} greedy completions equal to one process, "
              f"{evicted:.0f} tokens evicted on the -np 2 server")
        if same != len(PROMPTS):
            failures.append(f"dynamic retention: {same}/{len(PROMPTS)} equal to one process")
        if evicted <= 0:
            failures.append("dynamic retention: the -np 2 server evicted nothing (the budget is not small enough)")
    finally:
        for s in (one, tp):
            s.proc.send_signal(signal.SIGTERM)  # mpirun forwards it to both ranks: a non-zero exit, not checked here
            try:
                s.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                s.proc.kill()


def rank0_pid(tp):
    for pid in subprocess.run(["pgrep", "-P", str(tp.proc.pid)], capture_output=True, text=True).stdout.split():
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=0" in env:
            return int(pid)
    return None


def stop_tp(tp):
    """SIGTERM to rank 0 (it drains, saves, tells rank 1 to stop); the job's exit code, or None."""
    pid = rank0_pid(tp)
    if pid:
        os.kill(pid, signal.SIGTERM)
    else:
        tp.proc.send_signal(signal.SIGTERM)
    try:
        return tp.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tp.proc.kill()
        return None


TIER_PROMPTS = [f"Once upon a time, in a town called {name}, there lived a little {animal} who loved to play in "
                f"the park with a red ball. Every day the {animal} ran to the big tree and looked at the sky. One "
                f"day, a kind old man came by and said hello. The {animal} was happy and wanted to be friends."
                for name, animal in (("Oak", "dog"), ("Pine", "cat"), ("Elm", "bird"), ("Ash", "fish"),
                                     ("Fir", "frog"), ("Yew", "bear"))]


def check_tier(binary, model, tmp, failures):
    """The disk tier under -np 2: six ~150-token prompts twice over in a pool that keeps fewer (blocks dropped,
    each rank saves its heads' part; the second round reads them back on both ranks): greedy text equal to one
    process's and blocks restored; after SIGTERM and a restart, the first prompt again: a hit, the same text."""
    tier = os.path.join(tmp, "tier")
    tp_cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", binary, "serve", "-m", model,
              "--port", "0", "--tensor-parallel-size", "2", "--kv-offload-dir", tier] + SERVE
    one = Server([binary, "serve", "-m", model, "--port", "0"] + SERVE, os.path.join(tmp, "one-t.log"))
    tp = Server(tp_cmd, os.path.join(tmp, "tp-t.log"))
    try:
        want = [complete(one, p, max_tokens=20) for p in TIER_PROMPTS]
        got = [complete(tp, p, max_tokens=20) for p in TIER_PROMPTS + TIER_PROMPTS]
        m = tp.metrics()
        same = sum(g == want[i % len(want)] for i, g in enumerate(got))
        print(f"disk tier: {same}/{len(got)} greedy completions equal to one process, "
              f"{m.get('kv_offload_hits_total', 0):.0f} blocks read back, "
              f"{m.get('kv_offload_write_bytes_total', 0):.0f} bytes written by rank 0")
        if same != len(got):
            failures.append(f"disk tier: {same}/{len(got)} equal: {[(a[:30], b[:30]) for a, b in zip(want * 2, got)]}")
        if m.get("kv_offload_hits_total", 0) <= 0:
            failures.append("disk tier: nothing was read back (the pool is not small enough)")
        if m.get("kv_offload_unshared_total", -1) != 0:  # rank 1 read back every block rank 0 did
            failures.append(f"disk tier: {m.get('kv_offload_unshared_total')} blocks rank 1 could not read back")
    finally:
        one.proc.send_signal(signal.SIGTERM)
        one.proc.wait(timeout=30)
        rc = stop_tp(tp)
    if rc != 0:
        failures.append(f"disk tier: the first -np 2 server exited {rc}")
    ranks = sorted(os.listdir(tier)) if os.path.isdir(tier) else []
    if ranks != ["rank-0-of-2", "rank-1-of-2"]:
        failures.append(f"disk tier: per-rank directories {ranks}")
    tp = Server(tp_cmd, os.path.join(tmp, "tp-t2.log"))
    try:
        again = complete(tp, TIER_PROMPTS[0], max_tokens=20)
        m = tp.metrics()
        hits = m.get("kv_offload_hits_total", 0) if m.get("kv_offload_unshared_total", -1) == 0 else 0
        print(f"disk tier after a restart: {'same text' if again == want[0] else 'DIFFERS'}, {hits:.0f} blocks read")
        if again != want[0] or hits <= 0:
            failures.append(f"disk tier after a restart: {again!r} vs {want[0]!r}, {hits} blocks read")
    finally:
        stop_tp(tp)
    # Rank 1's part lost: rank 0 reads its blocks back, rank 1 cannot, so they are forgotten and computed.
    shutil.rmtree(os.path.join(tier, "rank-1-of-2"), ignore_errors=True)
    tp = Server(tp_cmd, os.path.join(tmp, "tp-t3.log"))
    try:
        again = complete(tp, TIER_PROMPTS[0], max_tokens=20)
        unshared = tp.metrics().get("kv_offload_unshared_total", 0)
        print(f"disk tier without rank 1's files: {'same text' if again == want[0] else 'DIFFERS'}, "
              f"{unshared:.0f} blocks forgotten")
        if again != want[0] or unshared <= 0:
            failures.append(f"disk tier without rank 1's files: {again!r} vs {want[0]!r}, {unshared} forgotten")
    finally:
        stop_tp(tp)


def check_speculative(binary, model, tmp, failures):
    """Speculative decoding under -np 2 (issue SD): rank 0 proposes (prompt lookup, k = 4) and verifies, rank 1 runs
    each verify chunk's forward — with --max-num-seqs 2 a step holds up to 10 logits rows, more than the plain
    step's 2 (rank 1's buffer grows as rank 0's). 6 concurrent greedy completions equal one process's plain ones,
    with drafts accepted."""
    flags = SERVE[:-1] + ["2"]  # --max-num-seqs 2
    spec = json.dumps({"method": "ngram", "num_speculative_tokens": 4, "adaptive": False})
    one = Server([binary, "serve", "-m", model, "--port", "0"] + flags, os.path.join(tmp, "one-s.log"))
    tp = Server(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", binary, "serve", "-m", model,
                 "--port", "0", "--tensor-parallel-size", "2", "--speculative-config", spec] + flags,
                os.path.join(tmp, "tp-s.log"))
    try:
        prompts = [f"{PROMPTS[i % 4]} {i}" for i in range(6)]
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            got_tp = list(ex.map(lambda p: complete(tp, p, max_tokens=120), prompts))
        got_one = [complete(one, p, max_tokens=120) for p in prompts]
        same = sum(a == b for a, b in zip(got_one, got_tp))
        m = tp.metrics()
        drafted, accepted = m.get("spec_decode_num_draft_tokens_total", 0), m.get("spec_decode_num_accepted_tokens_total", 0)
        print(f"speculative -np 2: {same}/6 equal to one process, {accepted:.0f} of {drafted:.0f} drafts accepted")
        if same != 6:
            failures.append(f"speculative: {same}/6 equal: {[(a[:40], b[:40]) for a, b in zip(got_one, got_tp)]}")
        if accepted <= 0:
            failures.append(f"speculative: no draft accepted ({drafted} drafted)")
    finally:
        for s in (one, tp):
            s.proc.send_signal(signal.SIGTERM)
            try:
                s.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                s.proc.kill()


def main():
    binary, model = sys.argv[1:3]
    ci = bool(os.environ.get("CI"))
    if not shutil.which("mpirun") or not os.path.exists(model):
        print(("FAIL" if ci else "SKIP") + ": no mpirun or no model")
        return 1 if ci else 77
    failures = []
    tmp = tempfile.mkdtemp(prefix="slimkv-serve-tp-")
    one = Server([binary, "serve", "-m", model, "--port", "0"] + SERVE, os.path.join(tmp, "one.log"))
    tp = Server(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", binary, "serve", "-m", model,
                 "--port", "0", "--tensor-parallel-size", "2"] + SERVE, os.path.join(tmp, "tp.log"))
    try:
        for p in PROMPTS:
            for stream in (False, True):
                a, b = complete(one, p, stream=stream), complete(tp, p, stream=stream)
                if a != b:
                    failures.append(f"{p!r} stream={stream}: one process {a!r}, -np 2 {b!r}")
        a, b = chat(one), chat(tp)
        if a != b:
            failures.append(f"chat: one process {a!r}, -np 2 {b!r}")
        for params in SAMPLED:
            a, b = sampled(one, params), sampled(tp, params)
            # log-probabilities to summation order (the split sums each logit in two halves): within 1e-4
            if a[:2] != b[:2] or len(a[2]) != len(b[2]) or any(abs(x - y) > 1e-4 for x, y in zip(a[2], b[2])):
                failures.append(f"sampled {params}: one process {str(a)[:300]}, -np 2 {str(b)[:300]}")
        print(f"completions, streams, chat and sampled: {'equal' if not failures else 'DIFFER'}")
        before = tp.metrics().get("num_preemptions_total", 0)
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            prompts = [f"{PROMPTS[i % 4]} {i}" for i in range(8)]
            got_tp = list(ex.map(lambda p: complete(tp, p, max_tokens=150), prompts))
            got_one = list(ex.map(lambda p: complete(one, p, max_tokens=150), prompts))
        preempted = tp.metrics().get("num_preemptions_total", 0) - before
        same = sum(a == b for a, b in zip(got_one, got_tp))
        print(f"8 concurrent: {same}/8 equal to one process, {preempted:.0f} preemptions on the -np 2 server")
        if same != 8:
            failures.append(f"concurrent: {same}/8 equal: {[(a[:40], b[:40]) for a, b in zip(got_one, got_tp)]}")
        if preempted < 1:
            failures.append("concurrent: the -np 2 server never preempted (the pool is not small enough)")
        drop_stream(tp)
        time.sleep(1.0)
        after = complete(tp, PROMPTS[0])
        m = tp.metrics()
        print(f"dropped stream: next request {'ok' if after == complete(one, PROMPTS[0]) else 'DIFFERS'}, running "
              f"{m.get('num_requests_running')}, waiting {m.get('num_requests_waiting')}, KV "
              f"{m.get('kv_cache_usage_perc')}")
        if after != complete(one, PROMPTS[0]):
            failures.append(f"after a dropped stream: {after!r}")
        for g in ("num_requests_running", "num_requests_waiting"):
            if m.get(g) != 0:
                failures.append(f"after a dropped stream: {g} = {m.get(g)}")
    finally:
        t0 = time.time()
        # SIGTERM goes to rank 0, as to a single server (mpirun would forward it to every rank)
        if not rank0_pid(tp):
            failures.append("no rank 0 process found under mpirun")
        rc = stop_tp(tp)
        log = open(tp.log_path, errors="replace").read()
        print(f"SIGTERM to rank 0: mpirun exited {rc} after {time.time() - t0:.1f} s; "
              f"{[l for l in log.splitlines() if 'rank 1 of 2: stopped' in l][:1]}")
        if rc != 0 or "rank 1 of 2: stopped" not in log:
            failures.append(f"SIGTERM: exit {rc}: {log[-800:]}")
        one.proc.send_signal(signal.SIGTERM)
        one.proc.wait(timeout=30)
    try:
        check_retention(binary, model, tmp, failures)
        check_speculative(binary, model, tmp, failures)
    except RuntimeError as e:
        failures.append(f"dynamic retention: {e}")
    try:
        check_tier(binary, model, tmp, failures)
    except RuntimeError as e:
        failures.append(f"disk tier: {e}")
    shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
