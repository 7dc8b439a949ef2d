#!/usr/bin/python3
"""Trains kjv-4k's draft model for speculative decoding (issue SD): a small Llama (2 layers, dim 128 by default) on
kjv-4k's vocabulary — `train.py prep` rebuilds it from the same corpus; the script checks that it tokenizes
kjv-valid.txt exactly as the committed model does — by plain next-token prediction on the prep's token arrays, a
quarter of the sequences a natural span written twice (copying: a draft must quote as its target does). Budgeted by
wall clock with a cosine learning rate; writes --work/ckpt.pt in train.py's format, so `train.py export` and
`slimkv convert` make its GGUF.

Usage: /usr/bin/python3 tools/train/train.py prep --work build/train-kjv-draft
       OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/train/train_draft.py --work build/train-kjv-draft --budget-min 25
       /usr/bin/python3 tools/train/train.py export --work build/train-kjv-draft
       build/slimkv convert build/train-kjv-draft/hf -o models/kjv-4k-draft/model.gguf
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Llama  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check_vocabulary(work):
    """The prep's sentencepiece model must give the committed kjv-4k's ids on kjv-valid.txt."""
    ids = np.fromfile(os.path.join(work, "kjv_valid.u16"), dtype=np.uint16).tolist()
    out = subprocess.run([os.path.join(ROOT, "build", "slimkv"), "tokenize", "-m",
                          os.path.join(ROOT, "models", "kjv-4k", "model.gguf"), "--file",
                          os.path.join(ROOT, "..", "shared", "data", "kjv-valid.txt")],
                         check=True, capture_output=True, text=True).stdout.split()
    ours = [int(x) for x in out]
    if ours[:1] == [1]:
        ours = ours[1:]
    if ours != ids:
        sys.exit("train_draft: the prep's vocabulary is not kjv-4k's (kjv-valid.txt tokenizes differently)")
    print(f"train_draft: vocabulary checked: {len(ids)} ids of kjv-valid.txt equal kjv-4k's")


def batch(data, rng, n, length, copy_share):
    rows = []
    for _ in range(n):
        if rng.random() < copy_share:  # a natural span, then the same span again
            half = length // 2
            s = rng.integers(0, len(data) - half - 1)
            span = data[s:s + half]
            seq = np.concatenate([span, span, data[s + half:s + half + 1]])[:length + 1]
        else:
            s = rng.integers(0, len(data) - length - 1)
            seq = data[s:s + length + 1]
        rows.append(seq.astype(np.int64))
    t = torch.from_numpy(np.stack(rows))
    return t[:, :-1], t[:, 1:]


def valid_loss(model, valid, length):
    model.eval()
    with torch.no_grad():
        n = (len(valid) - 1) // length
        x = torch.from_numpy(valid[:n * length].astype(np.int64)).view(n, length)
        y = torch.from_numpy(valid[1:n * length + 1].astype(np.int64)).view(n, length)
        losses = [F.cross_entropy(model(x[i:i + 8]).reshape(-1, model.cfg.vocab), y[i:i + 8].reshape(-1)).item()
                  for i in range(0, min(n, 64), 8)]
    model.train()
    return sum(losses) / len(losses)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "train-kjv-draft"))
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--rope-base", type=float, default=500000.0)  # kjv-4k's
    ap.add_argument("--max-len", type=int, default=4096)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--copy-share", type=float, default=0.25)
    ap.add_argument("--budget-min", type=float, default=25)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    check_vocabulary(args.work)
    data = np.concatenate([np.fromfile(os.path.join(args.work, f), dtype=np.uint16)
                           for f in ("kjv_train.u16", "other.u16")])
    valid = np.fromfile(os.path.join(args.work, "kjv_valid.u16"), dtype=np.uint16)
    cfg = Config(2048, args.dim, args.layers, args.heads, args.kv_heads, args.hidden, args.rope_base, args.max_len)
    model = Llama(cfg)
    opt = torch.optim.AdamW(model.param_groups(0.1), lr=args.lr, betas=(0.9, 0.95))
    t0, step, log = time.time(), 0, open(os.path.join(args.work, "draft_log.jsonl"), "w")
    budget_s = args.budget_min * 60
    while time.time() - t0 < budget_s:
        frac = (time.time() - t0) / budget_s
        lr = args.lr * min(1.0, (step + 1) / 100) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch(data, rng, args.batch, args.length, args.copy_share)
        loss = F.cross_entropy(model(x).reshape(-1, cfg.vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 200 == 0:
            rec = {"step": step, "loss": round(loss.item(), 4), "lr": lr, "min": round((time.time() - t0) / 60, 1),
                   "valid": round(valid_loss(model, valid, args.length), 4)}
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print("train_draft:", rec, flush=True)
    rec = {"step": step, "valid_loss_256": valid_loss(model, valid, 256), "minutes": (time.time() - t0) / 60}
    print("train_draft: done", rec)
    torch.save({"model": model.state_dict(), "state": {"step": step}, "cfg": cfg.__dict__},
               os.path.join(args.work, "ckpt.pt"))


if __name__ == "__main__":
    main()
