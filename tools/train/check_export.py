#!/usr/bin/python3
"""Checks an exported test model against its torch checkpoint: the same token ids (a held-out KJV text, BOS first)
through torch, slimkv on the Hugging Face folder, slimkv on the GGUF, and llama.cpp (../shared/bench-ref's
slimkv-ref) on the GGUF; prints max |dlogit| and argmax agreement of each against torch, and whether slimkv's and
sentencepiece's tokenizations of the text agree.

Usage: /usr/bin/python3 tools/train/check_export.py --work DIR --hf HFDIR --gguf FILE [--tokens 512]"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Llama  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REF = os.path.join(ROOT, "..", "shared", "bench-ref", "llama.cpp")


def compare(name, got, want):
    d = np.abs(got - want).max()
    agree = (got.argmax(-1) == want.argmax(-1)).mean()
    print(f"check: {name}: max |dlogit| {d:.3g}, argmax agreement {agree:.4f}")
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--hf", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--tokens", type=int, default=512)
    args = ap.parse_args()
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.work, "tokenizer.model"))
    text = open(os.path.join(ROOT, "..", "shared", "data", "kjv-valid.txt"), encoding="utf-8").read()[:args.tokens * 4]
    ids = ([1] + sp.encode(text))[:args.tokens]
    saved = torch.load(os.path.join(args.work, "ckpt.pt"))
    model = Llama(Config(**saved["cfg"]))
    model.load_state_dict(saved["model"])
    model.eval()
    with torch.no_grad():
        want = model(torch.tensor([ids]))[0].numpy()
    tmp = tempfile.mkdtemp()
    ids_file = os.path.join(tmp, "p.ids")
    open(ids_file, "w").write(",".join(map(str, ids)))
    slimkv = os.path.join(ROOT, "build", "slimkv")
    worst = 0.0
    for name, model_path in (("slimkv hf", args.hf), ("slimkv gguf", args.gguf)):
        out = os.path.join(tmp, name.replace(" ", "_") + ".f32")
        subprocess.run([slimkv, "logits", "-m", model_path, "--ids-file", ids_file, "-o", out], check=True,
                       capture_output=True)
        worst = max(worst, compare(name, np.fromfile(out, dtype=np.float32).reshape(want.shape), want))
    env = dict(os.environ, LD_LIBRARY_PATH=REF)
    prefix = os.path.join(tmp, "ref")
    subprocess.run([os.path.join(REF, "slimkv-ref"), args.gguf, ids_file, prefix, "--threads", "2"], check=True,
                   capture_output=True, env=env)
    worst = max(worst, compare("llama.cpp gguf", np.fromfile(prefix + ".logits.f32", dtype=np.float32)
                               .reshape(want.shape), want))
    tok = subprocess.run([slimkv, "tokenize", "-m", args.gguf, "-p", text], check=True, capture_output=True,
                         text=True).stdout.split()
    same = [int(t) for t in tok] == [1] + sp.encode(text)
    print(f"check: slimkv's tokenization of {len(text)} characters equals sentencepiece's: {same}")
    sys.exit(0 if worst < 0.05 and same else 1)


if __name__ == "__main__":
    main()
