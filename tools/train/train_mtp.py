#!/usr/bin/python3
"""Trains an MTP head (multi-token prediction, DeepSeek-V3's layout) for the committed kjv-4k (issue SD): kjv-4k is
frozen; the head reads kjv-4k's final-normed hidden state h_i and the embedding of the next token x_{i+1},
    z = eh_proj([enorm(embed(x_{i+1})) | hnorm(h_i)]),  g = shared_head_norm(block(z)),  logits = g · embed^T
and predicts x_{i+2}. `block` is one Llama layer (initialised from kjv-4k's last), the embedding and the output head
are kjv-4k's own (tied). A second pass feeds the head its own g_i as the hidden state of position i + 1 (the way
slimkv drafts k > 1 tokens), weighted --chain-weight.
  train      budgeted by wall clock (cosine learning rate); writes --work/mtp.pt
  export     kjv-4k's weights + the head as a Hugging Face directory (`model.layers.4.*`, config
             `num_nextn_predict_layers: 1`) that `slimkv convert` writes as one GGUF (`blk.4.nextn.*`)
  reference  the head's logits for ids given on stdin (JSON: {"ids": [...]}) -> JSON on stdout: the independent
             forward slimkv's MTP head is tested against (tests/unit/mtp_head_test.cpp)

Usage: /usr/bin/python3 tools/train/train.py prep --work build/train-kjv-draft   (the corpus as kjv-4k's ids)
       OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/train/train_mtp.py train --work build/train-kjv-draft
       /usr/bin/python3 tools/train/train_mtp.py export --head-out models/kjv-4k-mtp/head.pt
       build/slimkv convert -m build/kjv-mtp-hf -o models/kjv-4k-mtp/model.gguf --name kjv-4k-mtp
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Block, Config, Llama, RMSNorm, rope_tables  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.path.join(ROOT, "models", "kjv-4k", "checkpoint.pt")


class MtpHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg.dim
        self.enorm, self.hnorm, self.shared_norm = RMSNorm(d, cfg.eps), RMSNorm(d, cfg.eps), RMSNorm(d, cfg.eps)
        self.eh_proj = nn.Linear(2 * d, d, bias=False)
        self.block = Block(cfg)
        nn.init.normal_(self.eh_proj.weight, std=0.02)

    def forward(self, emb, h, cos, sin, mask):  # emb, h: [B, T, d] -> g: [B, T, d] (final-normed)
        z = self.eh_proj(torch.cat([self.enorm(emb), self.hnorm(h)], dim=-1))
        return self.shared_norm(self.block(z, cos, sin, mask))


def load_target():
    saved = torch.load(TARGET)
    cfg = Config(**saved["cfg"])
    model = Llama(cfg)
    model.load_state_dict({k: v.float() for k, v in saved["model"].items()})
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, cfg


def target_hidden(model, ids):  # final-normed hidden states [B, T, d]
    T = ids.shape[1]
    cos, sin = rope_tables(model.cfg, T)
    mask = torch.full((T, T), float("-inf")).triu(1)
    x = model.embed_tokens(ids)
    for blk in model.layers:
        x = blk(x, cos, sin, mask)
    return model.norm(x)


def head_logits(model, head, ids, chain):
    """ids [B, T + 2 + chain]: pass 1 at positions 0..T-1 predicts x_{i+2}; pass 2 (chain) at positions 1..T-1."""
    T = ids.shape[1] - 2 - chain
    with torch.no_grad():
        h = target_hidden(model, ids[:, :T])
    cos, sin = rope_tables(model.cfg, T + 1)
    mask = torch.full((T, T), float("-inf")).triu(1)
    emb = model.embed_tokens.weight
    g = head(F.embedding(ids[:, 1:T + 1], emb), h, cos[:T], sin[:T], mask)
    out = [(g @ emb.t(), ids[:, 2:T + 2])]
    if chain:
        m2 = torch.full((T - 1, T - 1), float("-inf")).triu(1)
        g2 = head(F.embedding(ids[:, 2:T + 1], emb), g[:, :-1], cos[1:T], sin[1:T], m2)
        out.append((g2 @ emb.t(), ids[:, 3:T + 2]))
    return out


def sample(data, rng, n, length, copy_share):
    rows = []
    for _ in range(n):
        if rng.random() < copy_share:  # a natural span, then the same span again (quoting)
            half = length // 2
            s = rng.integers(0, len(data) - half - 1)
            span = data[s:s + half]
            seq = np.concatenate([span, span, data[s + half:s + half + length]])[:length]
        else:
            s = rng.integers(0, len(data) - length - 1)
            seq = data[s:s + length]
        rows.append(seq.astype(np.int64))
    return torch.from_numpy(np.stack(rows))


def train(args):
    model, cfg = load_target()
    head = MtpHead(cfg)
    head.block.load_state_dict(model.layers[-1].state_dict())  # warm start: kjv-4k's last layer
    data = np.concatenate([np.fromfile(os.path.join(args.work, f), dtype=np.uint16)
                           for f in ("kjv_train.u16", "other.u16")])
    valid = np.fromfile(os.path.join(args.work, "kjv_valid.u16"), dtype=np.uint16)
    rng = np.random.default_rng(args.seed)
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    t0, step, budget_s = time.time(), 0, args.budget_min * 60
    log = open(os.path.join(args.work, "mtp_log.jsonl"), "w")
    while time.time() - t0 < budget_s:
        frac = (time.time() - t0) / budget_s
        lr = args.lr * min(1.0, (step + 1) / 50) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        ids = sample(data, rng, args.batch, args.length + 3, args.copy_share)
        outs = head_logits(model, head, ids, 1)
        losses = [F.cross_entropy(lg.reshape(-1, cfg.vocab), y.reshape(-1)) for lg, y in outs]
        loss = losses[0] + args.chain_weight * losses[1]
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 100 == 0:
            rec = {"step": step, "loss1": round(losses[0].item(), 4), "loss2": round(losses[1].item(), 4),
                   "valid": round(valid_loss(model, head, valid, args.length), 4),
                   "min": round((time.time() - t0) / 60, 1)}
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print("train_mtp:", rec, flush=True)
            torch.save({"head": head.state_dict(), "step": step}, os.path.join(args.work, "mtp.pt"))
    torch.save({"head": head.state_dict(), "step": step}, os.path.join(args.work, "mtp.pt"))
    print("train_mtp: done", {"step": step, "valid": valid_loss(model, head, valid, args.length)})


def valid_loss(model, head, valid, length):
    with torch.no_grad():
        n = min(32, (len(valid) - 3) // (length + 3))
        ids = torch.from_numpy(valid[:n * (length + 3)].astype(np.int64)).view(n, length + 3)
        lg, y = head_logits(model, head, ids, 1)[0]
        return F.cross_entropy(lg.reshape(-1, model.cfg.vocab), y.reshape(-1)).item()


def load_head(work, cfg):
    head = MtpHead(cfg)
    head.load_state_dict(torch.load(os.path.join(work, "mtp.pt"))["head"])
    head.eval()
    return head


def export(args):
    from train import write_llama2c_tokenizer, write_safetensors
    model, cfg = load_target()
    head = load_head(args.work, cfg)
    tensors = {Llama.hf_name(k): v.to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    L = cfg.layers
    for k, v in head.block.state_dict().items():
        tensors[Llama.hf_name(f"layers.{L}.{k}")] = v.to(torch.float16).contiguous()
    for ours, hf in (("eh_proj.weight", "eh_proj.weight"), ("enorm.weight", "enorm.weight"),
                     ("hnorm.weight", "hnorm.weight"), ("shared_norm.weight", "shared_head.norm.weight")):
        tensors[f"model.layers.{L}.{hf}"] = head.state_dict()[ours].to(torch.float16).contiguous()
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors)
    conf = cfg.hf_config()
    conf["num_nextn_predict_layers"] = 1
    json.dump(conf, open(os.path.join(args.out, "config.json"), "w"), indent=1)
    if args.head_out:  # the head alone in F16: the reference forward's weights (what the GGUF holds)
        torch.save({"head": {k: v.to(torch.float16) for k, v in head.state_dict().items()}}, args.head_out)
    write_llama2c_tokenizer(os.path.join(args.work, "tokenizer.model"), os.path.join(args.out, "tokenizer.bin"))
    print(f"export: {args.out}")


def reference(args):
    """Logits of the head at every position i < n - 1 (input h_i, x_{i+1}), in float64 from the F16 weights."""
    torch.set_default_dtype(torch.float64)
    model, cfg = load_target()
    head = load_head(args.work, cfg) if args.head is None else None
    if head is None:
        head = MtpHead(cfg)
        head.load_state_dict({k: v.double() for k, v in torch.load(args.head)["head"].items()})
    model.double()
    head.double()
    head.eval()
    ids = torch.tensor([json.load(sys.stdin)["ids"]], dtype=torch.int64)
    n = ids.shape[1]
    with torch.no_grad():
        h = target_hidden(model, ids)
        cos, sin = rope_tables(cfg, n)
        mask = torch.full((n - 1, n - 1), float("-inf")).triu(1)
        g = head(model.embed_tokens(ids[:, 1:]), h[:, :-1], cos[:n - 1].double(), sin[:n - 1].double(), mask)
        lg = g @ model.embed_tokens.weight.t()
    json.dump({"logits": lg[0].tolist(), "hidden": g[0].tolist()}, sys.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["train", "export", "reference"])
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "train-kjv-draft"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "kjv-mtp-hf"))
    ap.add_argument("--head", default=None, help="reference: the head's weights (mtp.pt) instead of --work's")
    ap.add_argument("--head-out", default=None, help="export: also the head alone in F16 (head.pt)")
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--copy-share", type=float, default=0.25)
    ap.add_argument("--chain-weight", type=float, default=0.5)
    ap.add_argument("--budget-min", type=float, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    {"train": train, "export": export, "reference": reference}[args.cmd](args)


if __name__ == "__main__":
    main()
