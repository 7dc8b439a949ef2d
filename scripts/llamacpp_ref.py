"""Which llama.cpp build (../shared/bench-ref/llama.cpp) the side-by-side benchmarks run on this machine.

The reference build loads the best CPU variant the CPU reports. On some Intel Xeon VMs with AMX that variant
(`sapphirerapids`) dies with SIGILL in `ggml_backend_amx_mul_mat` (a `tileloadd` with no valid tile
configuration; llama.cpp PR #26954 describes it) on any quantized prompt, and its AMX buffer type aborts on some
files (GGML_ASSERT(*cur_backend_id != -1) in ggml_backend_sched). Then the benchmarks run llama.cpp's next
best variant from a copy of the directory without the AMX module, and say so in their tables.
Must not know: what is being benchmarked.
"""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = os.path.normpath(os.path.join(ROOT, "..", "shared", "bench-ref", "llama.cpp"))
AMX_MODULE = "libggml-cpu-sapphirerapids.so"


def loaded_variant(stderr):
    for line in stderr.splitlines():
        if "loaded CPU backend from" in line:
            return os.path.basename(line.split()[-1]).removeprefix("libggml-cpu-").removesuffix(".so")
    return "?"


def cpu_has_amx():
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and " amx_int8" in line for line in f)


def without_amx(work):
    """A copy of the reference build without its AMX module (an executable finds its modules beside its real path)."""
    copy = os.path.join(work, "llama.cpp-no-amx")
    os.makedirs(copy, exist_ok=True)
    for name in os.listdir(REF):
        if name != AMX_MODULE and os.path.isfile(os.path.join(REF, name)):
            shutil.copy2(os.path.join(REF, name), os.path.join(copy, name))
    return copy


def reference_dir(work):
    """Where slimkv-ref runs for reference outputs: without the AMX variant on AMX machines (its extra buffer type
    aborts on some files: GGML_ASSERT(*cur_backend_id != -1))."""
    return without_amx(work) if cpu_has_amx() else REF


def runnable_dir(probe_model, work):
    """(directory, note): REF when its llama-bench survives a short quantized prompt on probe_model, else a copy
    under work without the AMX module. note is one line for the table header."""
    probe = [os.path.join(REF, "llama-bench"), "-m", probe_model, "-t", "1", "-p", "32", "-n", "0", "-r", "1"]
    r = subprocess.run(probe, capture_output=True, text=True)
    if r.returncode == 0:
        return REF, f"llama.cpp CPU variant: {loaded_variant(r.stderr)}"
    if not cpu_has_amx():  # only the AMX variant is worked around: anything else is a real failure
        raise RuntimeError(f"llama-bench failed ({r.returncode}): {r.stderr[-2000:]}")
    why = "SIGILL in ggml_backend_amx_mul_mat" if r.returncode == -4 else "an abort in its scheduler"
    copy = without_amx(work)
    probe[0] = os.path.join(copy, "llama-bench")
    r = subprocess.run(probe, capture_output=True, text=True, check=True)
    return copy, (f"llama.cpp CPU variant: {loaded_variant(r.stderr)} (its AMX variant, sapphirerapids, dies here "
                  f"with {why} — llama.cpp PR #26954 — so its next best one runs)")
