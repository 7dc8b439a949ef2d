#!/usr/bin/python3
"""GET /dashboard in a real browser (Debian's headless chromium): the page loads against a server under load, its
numbers are checked against /metrics, and a screenshot is saved. Usage:
  dashboard_browser_test.py SLIMKV_BINARY MODEL SCREENSHOT_PNG
Exit 77 (ctest: skipped) when chromium or the model is absent.

Under load the page's counters must lie between a /metrics scrape taken before the browser started and one taken
after it ended. Then, with the server idle, every number on the page must equal what this script computes from
/metrics itself (histogram quantiles, means, rates, the health verdicts against the seed's thresholds)."""
import http.client
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time



def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def request(port, method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, json.dumps(body) if body is not None else None,
                  {"Content-Type": "application/json"} if body is not None else {})
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def parse_metrics(text):
    """[(name, {label: value}, value)] of the exposition (the server's own output: one sample a line)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$', line)
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def value(samples, name, **labels):
    for n, l, v in samples:
        if n == "slimkv:" + name and all(l.get(k) == x for k, x in labels.items()):
            return v
    return None


def quantile(q, samples, base):
    """Prometheus' histogram_quantile over the cumulative buckets of `base`."""
    buckets = sorted((math.inf if l["le"] == "+Inf" else float(l["le"]), v)
                     for n, l, v in samples if n == "slimkv:" + base + "_bucket")
    total = buckets[-1][1] if buckets else 0
    if total <= 0:
        return None
    rank, lo, below = q * total, 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == math.inf:
                return lo
            return le if c == below else lo + (le - lo) * (rank - below) / (c - below)
        lo, below = le, c
    return lo


def page_values(dom):
    """{data-key: data-value} of every element on the page that carries both (and data-state for the health)."""
    values, states = {}, {}
    dom = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # the page's code spells the attributes too
    for tag in re.findall(r"<[a-z]+\b[^>]*\bdata-key=[^>]*>", dom):
        key = re.search(r'data-key="([^"]*)"', tag).group(1)
        v = re.search(r'data-value="([^"]*)"', tag)
        if v:
            values[key] = None if v.group(1) == "" else float(v.group(1))
        s = re.search(r'data-state="([^"]*)"', tag)
        if s:
            states[key] = s.group(1)
    return values, states


def run_browser(chromium, url, extra, budget_ms):
    profile = tempfile.mkdtemp(prefix="slimkv-chromium-")
    try:
        cmd = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,900",
               f"--virtual-time-budget={budget_ms}"] + extra + [url]
        r = subprocess.run(cmd, capture_output=True, timeout=120)
        return r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace"), r.returncode
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class Load:
    """Clients sending completions (shared prefixes, so the prefix cache hits) until stopped."""

    def __init__(self, port, clients=6):
        self.port, self.stop, self.errors = port, threading.Event(), []
        self.threads = [threading.Thread(target=self.client, args=(i,)) for i in range(clients)]
        for t in self.threads:
            t.start()

    def client(self, i):
        k = 0
        while not self.stop.is_set():
            body = {"prompt": "Once upon a time there was a little girl named Lily. She liked to play " * 2 +
                    str(k % 5), "max_tokens": 24 + 8 * (i % 3), "temperature": 0.8, "seed": k, "stream": k % 2 == 0}
            status, text = request(self.port, "POST", "/v1/completions", body)
            if status != 200:
                self.errors.append(f"{status} {text[:200]}")
            k += 1

    def end(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def expected_from(samples, thresholds):
    """What the page should show for these metrics (its data-value, unrounded), judged by the thresholds the page
    was served with."""
    e = {"running": value(samples, "num_requests_running"), "waiting": value(samples, "num_requests_waiting"),
         "kv_usage_pct": 100 * value(samples, "kv_cache_usage_perc"),
         "kv_blocks_total": value(samples, "kv_cache_blocks_total"),
         "preemptions": value(samples, "num_preemptions_total"),
         "kv_bytes_per_token": value(samples, "kv_cache_total_bytes_per_token"),
         "kv_ratio": value(samples, "kv_cache_total_compression_ratio")}
    hits, queries = value(samples, "prefix_cache_hits_total"), value(samples, "prefix_cache_queries_total")
    e["prefix_hit_pct"] = 100 * hits / queries if queries > 0 else None
    drafted = value(samples, "spec_decode_num_draft_tokens_total")
    e["spec_accept_pct"] = 100 * value(samples, "spec_decode_num_accepted_tokens_total") / drafted if drafted else None
    e["spec_drafts"] = value(samples, "spec_decode_num_drafts_total")
    for r in ("stop", "length", "abort"):
        e["finished_" + r] = value(samples, "request_success_total", finished_reason=r)
    e["finished"] = e["finished_stop"] + e["finished_length"] + e["finished_abort"]
    for key, base in (("ttft", "time_to_first_token_seconds"), ("tpot", "request_time_per_output_token_seconds"),
                      ("itl", "inter_token_latency_seconds"), ("queue", "request_queue_time_seconds"),
                      ("e2e", "e2e_request_latency_seconds")):
        count, total = value(samples, base + "_count"), value(samples, base + "_sum")
        e[key + "_count"] = count
        e[key + "_mean_ms"] = 1000 * total / count if count > 0 else None
        for q in (50, 90, 99):
            v = quantile(q / 100, samples, base)
            e[f"{key}_p{q}_ms"] = None if v is None else 1000 * v
    for n, l, v in samples:
        if n == "slimkv:kv_cache_group_bytes_per_token":
            g = l["group"]
            e[f"group_{g}_bytes_per_token"] = v
            e[f"group_{g}_ratio"] = value(samples, "kv_cache_group_compression_ratio", group=g)
            e[f"group_{g}_layers"] = value(samples, "kv_cache_group_layers", group=g)
    checks = {"ttft": (e["ttft_mean_ms"], thresholds["ttft_ms"], True),
              "tpot": (e["tpot_mean_ms"], thresholds["tpot_ms"], True),
              "memory": (e["kv_usage_pct"], 100 * thresholds["memory_use"], True),
              "hit_rate": (e["prefix_hit_pct"], 100 * thresholds["cache_hit_rate"], False),
              "queue": (e["queue_mean_ms"], thresholds["queue_ms"], True)}
    states = {}
    for k, (v, limit, below) in checks.items():
        e["health_" + k] = v
        states["health_" + k] = "na" if v is None else ("ok" if (v < limit if below else v > limit) else "bad")
    return e, states


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def main():
    binary, model, screenshot = sys.argv[1:4]
    chromium = find_chromium()
    if not chromium:
        print("SKIP: no chromium (Debian: apt-get install chromium; scripts/setup installs it)")
        return 77
    if not os.path.exists(model):
        print(f"SKIP: {model} not found")
        return 77
    log = tempfile.NamedTemporaryFile(prefix="slimkv-dashboard-", suffix=".log", delete=False)
    server = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "--threads", "1", "--max-num-seqs", "4",
                               "--kv-cache-dtype", "int8", "--speculative-config",
                               '{"method": "ngram", "num_speculative_tokens": 3, "adaptive": false}'],
                              stdout=log, stderr=log)
    failures = []
    try:
        port = None
        for _ in range(600):
            m = re.search(r"listening on http://[^:]+:(\d+)", open(log.name).read())
            if m and request(int(m.group(1)), "GET", "/health")[0] == 200:
                port = int(m.group(1))
                break
            time.sleep(0.05)
        assert port, "the server did not start: " + open(log.name).read()
        status, page = request(port, "GET", "/dashboard")
        assert status == 200 and "<svg" in page and "THRESHOLDS_JSON" not in page, f"/dashboard: {status}"
        thresholds = json.loads(re.search(r"const THRESHOLDS = (\{.*?\});", page).group(1))
        assert thresholds["ttft_ms"] == 500, thresholds  # the seed's (ops/diagnosis.h)
        url = f"http://127.0.0.1:{port}/dashboard"

        # 1. Under load: counters on the page lie between the scrapes before and after; the screenshot.
        load = Load(port)
        time.sleep(1.5)
        before = parse_metrics(request(port, "GET", "/metrics")[1])
        dom, err, rc = run_browser(chromium, url, ["--dump-dom"], 4000)
        after = parse_metrics(request(port, "GET", "/metrics")[1])
        shot = os.path.join(tempfile.gettempdir(), f"slimkv-dashboard-{os.getpid()}.png")
        _, err2, rc2 = run_browser(chromium, url, [f"--screenshot={shot}"], 6000)
        load.end()
        assert rc == 0 and "data-polls" in dom, f"chromium --dump-dom failed ({rc}): {err[-2000:]}"
        assert rc2 == 0 and os.path.exists(shot), f"chromium --screenshot failed ({rc2}): {err2[-2000:]}"
        got, states = page_values(dom)
        for key, name, labels in (("preemptions", "num_preemptions_total", {}),
                                  ("finished_length", "request_success_total", {"finished_reason": "length"}),
                                  ("ttft_count", "time_to_first_token_seconds_count", {}),
                                  ("e2e_count", "e2e_request_latency_seconds_count", {})):
            lo, hi = value(before, name, **labels), value(after, name, **labels)
            if got.get(key) is None or not lo <= got[key] <= hi:
                failures.append(f"under load: {key} = {got.get(key)} not within [{lo}, {hi}] from /metrics")
        if not got.get("gen_tokens_per_s"):
            failures.append(f"under load: generated tokens/s is {got.get('gen_tokens_per_s')}")
        if got.get("ttft_count", 0) <= 0:
            failures.append("under load: no request counted")
        if load.errors:
            failures.append(f"load requests failed: {load.errors[:3]}")

        # 2. Idle: every number equals what /metrics says (nothing moves between the scrapes).
        for _ in range(200):
            idle = request(port, "GET", "/metrics")[1]
            s = parse_metrics(idle)
            if value(s, "num_requests_running") == 0 and value(s, "num_requests_waiting") == 0:
                break
            time.sleep(0.05)
        dom, err, rc = run_browser(chromium, url, ["--dump-dom"], 2500)
        s2 = parse_metrics(request(port, "GET", "/metrics")[1])
        assert rc == 0, f"chromium failed ({rc}): {err[-2000:]}"
        got, states = page_values(dom)
        want, want_states = expected_from(s2, thresholds)
        for key, v in want.items():
            if key not in got:
                failures.append(f"idle: the page shows no {key}")
            elif not close(got[key], v):
                failures.append(f"idle: {key}: page {got[key]} vs /metrics {v}")
        for key, st in want_states.items():
            if states.get(key) != st:
                failures.append(f"idle: health {key}: page {states.get(key)} vs expected {st}")
        if got.get("gen_tokens_per_s") not in (0.0, None):
            failures.append(f"idle: generated tokens/s {got.get('gen_tokens_per_s')}, expected 0")
        if not any(k.startswith("group_") for k in got):
            failures.append("idle: no KV group rows")
        if not failures:
            os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
            shutil.copyfile(shot, screenshot)
            print(f"dashboard: {len(want)} numbers match /metrics; screenshot {screenshot}")
        os.remove(shot)
    finally:
        server.terminate()
        server.wait(timeout=30)
        os.unlink(log.name)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
