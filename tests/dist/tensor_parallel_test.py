#!/usr/bin/env python3
"""Tensor parallelism over MPI against one process (issue S §2): usage
tensor_parallel_test.py SLIMKV_BINARY SYNTH_DIR [tensor|experts]   (CTest runs the two halves side by side; the
experts half also runs `bench offline` under mpirun: rank 0 schedules, rank 1 follows)

For each synthetic file and rank count: `mpirun -np N slimkv logits --tensor-parallel-size N` against
`slimkv logits` on the same ids — mean KL per position (F32 files: <= 1e-6), max |logit difference|, the argmax
equal wherever one process's top-2 margin exceeds 1e-3 — and greedy ids of `generate --prompt-ids` equal (F32 files;
their quantized variants compare logits only, to keep CI short). Over
Open MPI's shared-memory transport, once over TCP on loopback, and twice through slimkv's own shared-memory
all-reduce. Then a rank killed mid-run: the job ends
non-zero within 30 s, saying which rank died; a rank stopped mid-run (hung): the collective watchdog ends the job
within its timeout; and a model that cannot be split that way (deepseek4's 2 output
groups over 4 ranks) ends every rank with a clear error. MoE layers: each rank runs its range of experts for every
token routed to them (expert parallelism: EXPERT_MATRIX, both combines); MLA and DeepSeek-V4 keep their shared
latent / compressed streams whole on every rank. Calibrated caches (select's sketch index, low-rank K/V): each rank
slices the whole model's calibration to its own KV heads, greedy ids equal to one process. Speculative decoding
(a self-draft, greedy and sampled) at 2 ranks gives one process's plain ids.
Exit 0 pass, 1 fail, 77 skipped (no mpirun or no files; under CI a missing input fails)."""
import array
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# (file, ranks, mean-KL bound): the summation-order bound 1e-6 for every F32 file and most quantized ones (their
# activations are quantized per block, the same blocks on every rank). DeepSeek-V4's quantized files get 1e-4
# (measured 9e-7 Q8_0, 8e-5 MXFP4): the all-reduce's different order moves an activation by ~1e-7, which flips an
# int8 rounding now and then, and V4's four hyper-connection streams carry each flip through every layer.
MATRIX = [
    ("llama/llama-f32.gguf", 2, 1e-6), ("llama/llama-f32.gguf", 4, 1e-6),
    ("qwen3/qwen3-f32.gguf", 2, 1e-6), ("qwen3/qwen3-f32.gguf", 4, 1e-6),
    ("qwen2/qwen2-f32.gguf", 2, 1e-6),
    ("gemma3/gemma3-f32.gguf", 2, 1e-6), ("gemma3/gemma3-f32.gguf", 4, 1e-6),
    ("phi3/phi3-f32.gguf", 2, 1e-6),
    ("qwen3moe/qwen3moe-f32.gguf", 2, 1e-6), ("qwen3moe/qwen3moe-f32.gguf", 4, 1e-6),
    ("qwen3moe/qwen3moe-mxfp4_moe.gguf", 2, 1e-6),
    ("deepseek2/deepseek2-lite-F32.gguf", 2, 1e-6), ("deepseek2/deepseek2-v3-F32.gguf", 2, 1e-6),
    ("deepseek2/deepseek2-lite-Q8_0.gguf", 2, 1e-6),
    ("deepseek4/deepseek4-F32.gguf", 2, 1e-6), ("deepseek4/deepseek4-Q8_0.gguf", 2, 1e-4),
    ("deepseek4/deepseek4-MXFP4_MOE.gguf", 2, 1e-4),
    ("llama/llama-f16.gguf", 2, 1e-6), ("llama/llama-q8_0.gguf", 2, 1e-6), ("llama/llama-q4_0.gguf", 2, 1e-6),
]
# Expert parallelism (E divides T): E = 1 splits every expert's columns over every rank, E = T (the default above)
# keeps each rank's experts whole, between them groups of T / E ranks; the all-to-all combine sends each token's
# rows only to its owner rank (shared experts then whole). (file, ranks, mean-KL bound, extra flags)
EXPERT_MATRIX = [
    ("qwen3moe/qwen3moe-f32.gguf", 2, 1e-6, ["--expert-parallel-size", "1"]),
    ("qwen3moe/qwen3moe-f32.gguf", 4, 1e-6, ["--expert-parallel-size", "2"]),
    ("qwen3moe/qwen3moe-f32.gguf", 4, 1e-6, ["--expert-combine", "all-to-all"]),
    ("qwen3moe/qwen3moe-f32.gguf", 4, 1e-6, ["--expert-parallel-size", "2", "--expert-combine", "all-to-all"]),
    ("deepseek2/deepseek2-v3-F32.gguf", 2, 1e-6, ["--expert-parallel-size", "1"]),
    ("deepseek2/deepseek2-v3-F32.gguf", 2, 1e-6, ["--expert-combine", "all-to-all"]),
    ("deepseek4/deepseek4-F32.gguf", 2, 1e-6, ["--expert-parallel-size", "1", "--expert-combine", "all-to-all"]),
    ("qwen3moe/qwen3moe-mxfp4_moe.gguf", 2, 1e-6, ["--expert-parallel-size", "1"]),
]
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
TCP = ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]
ENV = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")  # containers forbid CMA's ptrace


def run(cmd, timeout=120, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or ENV)


def read_f32(path):
    a = array.array("f")
    a.frombytes(open(path, "rb").read())
    return a


def compare(ref, got, vocab):
    """(mean KL(ref || got) over positions, max |difference|, positions whose clear argmax differs)."""
    kl_sum, max_diff, flips = 0.0, 0.0, 0
    n = len(ref) // vocab
    for p in range(n):
        r, g = ref[p * vocab:(p + 1) * vocab], got[p * vocab:(p + 1) * vocab]
        mr, mg = max(r), max(g)
        zr = sum(math.exp(x - mr) for x in r)
        zg = sum(math.exp(x - mg) for x in g)
        kl = 0.0
        for x, y in zip(r, g):
            pr = math.exp(x - mr) / zr
            kl += pr * ((x - mr - math.log(zr)) - (y - mg - math.log(zg)))
        kl_sum += max(kl, 0.0)
        max_diff = max(max_diff, max(abs(x - y) for x, y in zip(r, g)))
        top = sorted(range(vocab), key=lambda i: -r[i])[:2]
        if r[top[0]] - r[top[1]] > 1e-3 and max(range(vocab), key=lambda i: g[i]) != top[0]:
            flips += 1
    return kl_sum / n, max_diff, flips


def check_file(binary, synth, rel, ranks, bound, tmp, failures, transport=(), env=None, label="", greedy_too=True,
               extra=()):
    model = os.path.join(synth, rel)
    ids_file = os.path.join(synth, "prompts", "p64.ids")
    ref, got = os.path.join(tmp, "ref.f32"), os.path.join(tmp, "tp.f32")
    r = run([binary, "logits", "-m", model, "--ids-file", ids_file, "-o", ref, "--threads", "1"])
    if r.returncode != 0:
        failures.append(f"{rel}: one process failed: {r.stderr[-500:]}")
        return
    r = run(MPIRUN + list(transport) + ["-np", str(ranks), binary, "logits", "-m", model, "--ids-file", ids_file,
                                        "-o", got, "--threads", "1", "--tensor-parallel-size", str(ranks)] + list(extra),
            env=env)
    if r.returncode != 0:
        failures.append(f"{rel} -np {ranks}: failed: {r.stderr[-800:]}")
        return
    a, b = read_f32(ref), read_f32(got)
    vocab = 512
    if len(a) != len(b) or len(a) % vocab:
        failures.append(f"{rel} -np {ranks}: {len(b)} logits, one process wrote {len(a)}")
        return
    kl, diff, flips = compare(a, b, vocab)
    name = f"{rel} -np {ranks}{' (tcp)' if transport == TCP else ''}{label}{' ' + ' '.join(extra) if extra else ''}"
    if greedy_too is False:  # quantized variants of a file whose F32 greedy run is checked: logits only (CI time)
        print(f"{name}: mean KL {kl:.2e} (bound {bound:.0e}), max |diff| {diff:.2e}, argmax flips {flips}")
        if kl > bound or flips:
            failures.append(f"{name}: mean KL {kl:.3e} (bound {bound:.0e}), {flips} clear argmax flips")
        return
    # Greedy ids: 16 tokens after the first 16 prompt ids.
    prompt = ",".join(open(ids_file).read().replace(",", " ").split()[:16])
    g1 = run([binary, "generate", "-m", model, "--prompt-ids", prompt, "-n", "16", "--print-ids", "--threads", "1"])
    g2 = run(MPIRUN + list(transport) + ["-np", str(ranks), binary, "generate", "-m", model, "--prompt-ids", prompt,
                                         "-n", "16", "--print-ids", "--threads", "1", "--tensor-parallel-size",
                                         str(ranks)] + list(extra), env=env)
    same = g1.returncode == 0 and g2.returncode == 0 and g1.stdout.strip() == g2.stdout.strip() and g1.stdout.strip()
    print(f"{name}: mean KL {kl:.2e} (bound {bound:.0e}), max |diff| {diff:.2e}, argmax flips {flips}, "
          f"greedy ids {'equal' if same else 'DIFFER'}")
    if kl > bound:
        failures.append(f"{name}: mean KL {kl:.3e} above {bound:.0e}")
    if flips:
        failures.append(f"{name}: {flips} clear argmaxes differ")
    if not same:
        failures.append(f"{name}: greedy ids differ: {g1.stdout.strip()} / {g2.stdout.strip()} {g2.stderr[-300:]}")


# Calibrated caches under tensor parallelism (issue K §5): a calibration file describes the whole model's KV heads and
# each rank takes its own heads' bases — select's sketch index (f32 pages; tq4 + an int8 residual window with an int4
# sketch) and low-rank K/V. Files: 2 KV heads split over 2 ranks, 1 KV head replicated with sliding windows, MHA.
CALIBRATED = [
    ("llama/llama-f32.gguf", ["--kv-sparse-mode", "select", "--kv-select-rank", "8", "--kv-select-fraction", "0.25"]),
    ("gemma3/gemma3-f32.gguf", ["--kv-cache-dtype", "tq4", "--kv-residual-tokens", "8", "--kv-sparse-mode", "select",
                                "--kv-select-rank", "8", "--kv-select-dtype", "int4", "--kv-select-fraction", "0.25"]),
    ("phi3/phi3-f32.gguf", ["--kv-cache-dtype", "tq4", "--kv-residual-tokens", "8", "--kv-sparse-mode", "select",
                            "--kv-select-rank", "8", "--kv-select-dtype", "int4", "--kv-select-fraction", "0.25"]),
    ("llama/llama-f32.gguf", ["--kv-compression-rank", "32"]),
]


def check_calibrated(binary, synth, tmp, failures):
    """Greedy ids of 48 tokens after a 64-token prompt: 2 ranks == one process, and != the same cache without the
    calibrated part (so the selection or projection acted)."""
    prompt = ",".join(open(os.path.join(synth, "prompts", "p64.ids")).read().replace(",", " ").split()[:64])
    text = os.path.normpath(os.path.join(synth, "..", "..", "data", "tinystories_valid_head.txt"))
    for rel, flags in CALIBRATED:
        model, calib = os.path.join(synth, rel), os.path.join(tmp, "model.calib")
        r = run([binary, "calibrate", "-m", model, "--data", text, "-o", calib, "--max-tokens", "600"])
        if r.returncode != 0:
            failures.append(f"{rel}: calibrate failed: {r.stderr[-500:]}")
            continue
        cache = flags + ["--kv-sink-tokens", "2", "--kv-recent-window", "8", "--kv-calibration", calib]
        gen = [binary, "generate", "-m", model, "--prompt-ids", prompt, "-n", "48", "--print-ids", "--threads", "1"]
        plain = flags[:flags.index("--kv-sparse-mode")] if "--kv-sparse-mode" in flags else []  # dtype, residual
        one = run(gen + cache)
        tp = run(MPIRUN + ["-np", "2"] + gen + ["--tensor-parallel-size", "2", "--kv-cache-memory", "0.1"] + cache)
        base = run(gen + plain)
        name = f"{rel} -np 2 {' '.join(flags)}"
        same = one.returncode == 0 and tp.returncode == 0 and one.stdout.strip() and one.stdout == tp.stdout
        acted = base.returncode == 0 and base.stdout != one.stdout
        print(f"{name}: greedy ids {'equal' if same else 'DIFFER'}, {'differ from' if acted else 'SAME AS'} "
              f"the uncalibrated cache")
        if not same:
            failures.append(f"{name}: greedy ids differ: {one.stdout.strip()} {one.stderr[-300:]} / "
                            f"{tp.stdout.strip()} {tp.stderr[-500:]}")
        if not acted:
            failures.append(f"{name}: the calibrated cache gave the uncalibrated cache's ids ({base.stderr[-300:]})")


# Speculative decoding under tensor parallelism (issue SD): rank 0 proposes (the model drafting for itself, k = 4)
# and verifies, the other rank runs each verify chunk's forward. Greedy and sampled (temperature 0.7, seed 7) ids
# at 2 ranks == one process's plain decoding: full attention, windows, dynamic retention with merges (each rank's
# rows' importance summed over the ranks, row by row).
SPECULATIVE = [
    ("llama/llama-f32.gguf", []),
    ("gemma3/gemma3-f32.gguf", []),
    ("llama/llama-f32.gguf", ["--kv-sparse-mode", "dynamic", "--kv-sparse-topk", "28", "--kv-sink-tokens", "4",
                              "--kv-recent-window", "8", "--kv-evict-policy", "merge", "--block-size", "8"]),
]


def check_speculative(binary, synth, failures):
    prompt = "1,45,99,301,7,88,45,99,301,7,88,45,99,301,7,88"
    for rel, flags in SPECULATIVE:
        model = os.path.join(synth, rel)
        spec = json.dumps({"method": "draft_model", "model": model, "num_speculative_tokens": 4, "adaptive": False})
        for temp in ("0", "0.7"):
            gen = [binary, "generate", "-m", model, "--prompt-ids", prompt, "-n", "40", "--print-ids", "--threads",
                   "1", "--temp", temp, "--seed", "7"] + flags
            plain = run(gen)  # one process, no drafts
            tp = run(MPIRUN + ["-np", "2"] + gen + ["--tensor-parallel-size", "2", "--kv-cache-memory", "0.1",
                                                    "--speculative-config", spec, "--verbose"])
            stats = [l for l in tp.stderr.splitlines() if l.startswith("speculative:")]
            name = f"{rel} -np 2 speculative {' '.join(flags)} temperature {temp}"
            print(f"{name}: {'equal' if plain.stdout == tp.stdout else 'DIFFER'}; {stats[0] if stats else '?'}")
            if plain.returncode != 0 or tp.returncode != 0 or not plain.stdout.strip() or plain.stdout != tp.stdout:
                failures.append(f"{name}: ids differ: {plain.stdout.strip()} {plain.stderr[-300:]} / "
                                f"{tp.stdout.strip()} {tp.stderr[-500:]}")
            elif not stats or " 0 accepted" in stats[0]:
                failures.append(f"{name}: no draft accepted ({stats})")


def start_long_job(binary, synth, what, failures, extra=(), env=None):
    """A 2-rank generate that runs for minutes, and its two rank processes once both are up; (None, None) if not."""
    model = os.path.join(synth, "gemma3", "gemma3-f32.gguf")
    proc = subprocess.Popen(MPIRUN + list(extra) + ["-np", "2", binary, "generate", "-m", model, "--prompt-ids",
                                                    "1,2,3", "-n", "100000", "--print-ids", "--threads", "1",
                                                    "--tensor-parallel-size", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or ENV)
    time.sleep(1.5)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    if proc.poll() is not None or len(children) < 2:
        proc.kill()
        failures.append(f"{what}: the job did not run long enough to reach a rank ({proc.poll()}, {children})")
        return None, None
    return proc, children


def signalled_job(binary, synth, sig, what, failures, extra=(), env=None):
    """A long 2-rank job whose last rank gets sig once both run; waits up to 30 s for the job to end:
    (proc, rank pids, stderr, seconds waited), or None (the job never ran, or it hung — a failure either way)."""
    proc, children = start_long_job(binary, synth, what, failures, extra=extra, env=env)
    if not proc:
        return None
    os.kill(int(children[-1]), sig)
    t0 = time.time()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        os.kill(int(children[-1]), signal.SIGKILL)
        failures.append(f"{what}: the job was still running 30 s after signal {sig} to a rank (a hang)")
        return None
    return proc, children, err, time.time() - t0


def check_killed_rank(binary, synth, failures):
    """A rank SIGKILLed mid-run ends the job non-zero within 30 s, naming the rank."""
    ended = signalled_job(binary, synth, signal.SIGKILL, "killed rank", failures)
    if not ended:
        return
    proc, _, err, waited = ended
    print(f"killed rank: job ended with {proc.returncode} after {waited:.1f} s: "
          f"{' '.join(l.strip() for l in err.splitlines() if 'rank' in l.lower())[:200]}")
    if proc.returncode == 0:
        failures.append("killed rank: the job exited 0")
    if "signal 9" not in err and "Killed" not in err:
        failures.append(f"killed rank: no clear error on stderr: {err[-500:]}")


def check_hung_rank(binary, synth, failures):
    """A rank stopped (SIGSTOP: alive, silent) mid-run: the others' collective watchdog ends the job, non-zero,
    within SLIMKV_COLLECTIVE_TIMEOUT_S (3 s here) plus a margin, with the error on stderr; nothing left running."""
    ended = signalled_job(binary, synth, signal.SIGSTOP, "hung rank", failures, extra=["-x", "SLIMKV_COLLECTIVE_TIMEOUT_S"],
                          env=dict(ENV, SLIMKV_COLLECTIVE_TIMEOUT_S="3"))
    if not ended:
        return
    proc, children, err, waited = ended
    print(f"hung rank: job ended with {proc.returncode} after {waited:.1f} s: "
          f"{[l for l in err.splitlines() if 'waited' in l][:1]}")
    if proc.returncode == 0 or "waited" not in err or waited > 15:
        failures.append(f"hung rank: exit {proc.returncode} after {waited:.1f} s: {err[-400:]}")
    for pid in children:
        if os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
            failures.append(f"hung rank: rank process {pid} still exists after the job ended")
            os.kill(int(pid), signal.SIGKILL)


def check_unsplittable(binary, synth, failures):
    """deepseek4's 2 output groups cannot be split over 4 ranks: every rank ends with a clear error."""
    model = os.path.join(synth, "deepseek4", "deepseek4-F32.gguf")
    r = run(MPIRUN + ["-np", "4", binary, "logits", "-m", model, "--ids", "1,2,3", "-o", os.devnull,
                      "--tensor-parallel-size", "4"], timeout=60)
    print(f"unsplittable: exit {r.returncode}: {[l for l in r.stderr.splitlines() if l.startswith('error')][:1]}")
    if r.returncode == 0 or "2 output groups, not divisible by 4 ranks" not in r.stderr:
        failures.append(f"deepseek4 under -np 4: expected a clear error, got {r.returncode}: {r.stderr[-400:]}")


def check_bad_expert_size(binary, synth, failures):
    """--expert-parallel-size that does not divide the ranks: every rank ends with a clear error."""
    model = os.path.join(synth, "qwen3moe", "qwen3moe-f32.gguf")
    r = run(MPIRUN + ["-np", "2", binary, "logits", "-m", model, "--ids", "1,2,3", "-o", os.devnull,
                      "--tensor-parallel-size", "2", "--expert-parallel-size", "4"], timeout=60)
    print(f"bad expert size: exit {r.returncode}: {[l for l in r.stderr.splitlines() if l.startswith('error')][:1]}")
    if r.returncode == 0 or "--expert-parallel-size 4 must divide" not in r.stderr:
        failures.append(f"--expert-parallel-size 4 under -np 2: expected a clear error, got {r.returncode}: "
                        f"{r.stderr[-400:]}")


def check_bench_offline(binary, synth, failures):
    """`bench offline` under mpirun: rank 0 schedules timed arrivals and broadcasts each step, rank 1 follows; every
    request finishes, none refused, the job exits 0, one JSON line (rank 0's)."""
    model = os.path.join(synth, "llama", "llama-f32.gguf")
    r = run(MPIRUN + ["-np", "2", binary, "bench", "offline", "-m", model, "--tensor-parallel-size", "2",
                      "--kv-cache-memory", "0.01", "--num-prompts", "12", "--input-len", "24", "--output-len", "16",
                      "--request-rate", "40", "--json"], timeout=120)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    try:
        j = json.loads(lines[0]) if len(lines) == 1 else {}
    except ValueError:
        j = {}
    print(f"bench offline -np 2: exit {r.returncode}, {j.get('requests_per_s', 0) * j.get('duration_s', 0):.0f} "
          f"requests finished, {j.get('rejected')} refused")
    if r.returncode != 0 or len(lines) != 1 or j.get("rejected") != 0 or \
            round(j.get("requests_per_s", 0) * j.get("duration_s", 0)) != 12:
        failures.append(f"bench offline under mpirun: exit {r.returncode}, {r.stdout[-300:]} {r.stderr[-500:]}")


def main():
    binary, synth = sys.argv[1:3]
    part = sys.argv[3] if len(sys.argv) > 3 else "tensor"
    ci = bool(os.environ.get("CI"))
    if not shutil.which("mpirun"):
        print(("FAIL" if ci else "SKIP") + ": no mpirun (Debian: apt-get install openmpi-bin libopenmpi-dev)")
        return 1 if ci else 77
    built = run([binary, "logits", "--ids", "1", "-o", os.devnull, "--tensor-parallel-size", "2", "-m",
                 os.path.join(synth, "llama", "llama-f32.gguf")])
    if "built without MPI" in built.stderr:
        print(("FAIL" if ci else "SKIP") + ": slimkv was built without MPI")
        return 1 if ci else 77
    files = [m[0] for m in (MATRIX if part == "tensor" else EXPERT_MATRIX)]
    missing = [rel for rel in files if not os.path.exists(os.path.join(synth, rel))]
    if missing:
        print(("FAIL" if ci else "SKIP") + f": missing {missing}")
        return 1 if ci else 77
    failures = []
    with tempfile.TemporaryDirectory(prefix="slimkv-tp-") as tmp:
        if part == "experts":
            for rel, ranks, bound, extra in EXPERT_MATRIX:
                quantized = not any(t in rel for t in ("f32", "F32"))
                check_file(binary, synth, rel, ranks, bound, tmp, failures, greedy_too=not quantized, extra=extra)
        else:
            for rel, ranks, bound in MATRIX:
                quantized = not any(t in rel for t in ("f32", "F32"))
                check_file(binary, synth, rel, ranks, bound, tmp, failures, greedy_too=not quantized)
            check_file(binary, synth, "llama/llama-f32.gguf", 2, 1e-6, tmp, failures, transport=TCP)
            shm = dict(ENV, SLIMKV_ALL_REDUCE="shm")  # the same-host path for every all-reduce (default: large ones)
            for rel, ranks in (("qwen3/qwen3-f32.gguf", 2), ("qwen3moe/qwen3moe-f32.gguf", 4)):
                check_file(binary, synth, rel, ranks, 1e-6, tmp, failures, transport=["-x", "SLIMKV_ALL_REDUCE"],
                           env=shm, label=" (shared-memory all-reduce)")
            check_calibrated(binary, synth, tmp, failures)
            check_speculative(binary, synth, failures)
    if part == "experts":
        check_bad_expert_size(binary, synth, failures)
        check_bench_offline(binary, synth, failures)
    if part == "tensor":
        check_killed_rank(binary, synth, failures)
        check_hung_rank(binary, synth, failures)
        check_unsplittable(binary, synth, failures)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
