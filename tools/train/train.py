#!/usr/bin/python3
"""Trains slimkv's long-context test model (issue L2) on the CPU with Debian's python3-torch (1.13).

A Llama-architecture model (RMSNorm, rotate-half RoPE with a large base, SwiGLU, GQA, head size 64, tied
embeddings) on the King James Bible (Debian's bible-kjv; Colossians..Revelation held out, as for kjv-1k) and the
plain texts of ../shared/data, mixed with synthetic long-range tasks — several key -> number needles with a question
about some of them, copies of text spans, random spans written several times — in a curriculum: an induction stage at
128 tokens (mostly repeated random spans) until held-out copying passes a bar, then retrieval at 256 tokens, the
length doubling only once the held-out needle accuracy passes the bar, up to the target length.

Stages (each resumable; state lives in --work):
  prep    the corpus, a sentencepiece BPE vocabulary (byte fallback, single digits) and token arrays
  train   the curriculum, budgeted by wall clock, a checkpoint every --ckpt-every steps (resumes from the last;
          --init FILE starts from a committed `checkpoint` file instead)
  checkpoint  the weights (F16) and curriculum state as one small file a session may commit
  testset the held-out passkey / needle test set (JSONL) committed beside the model
  export  a Hugging Face folder (config.json + model.safetensors, F16) and the tokenizer as llama2.c tokenizer.bin,
          for `slimkv convert` (slimkv's own GGUF writer)

Usage: nice /usr/bin/python3 tools/train/train.py prep|train|export [--work DIR] [options]
"""
import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared", "data")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402  (the synthetic tasks and the needle test set)
from model import Config, Llama  # noqa: E402


# ---------------------------------------------------------------- prep

def kjv_chapters():
    """(book, chapter text) in canonical order, from Debian's `bible` (verse references dropped)."""
    out = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], check=True, capture_output=True, text=True).stdout
    chapters, key = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        ref, _, text = line.partition(" ")  # "1Sm12:3 text": book 1Sm, chapter 12
        chap = ref.split(":")[0]
        book = chap.rstrip("0123456789")
        if chap != key:
            chapters.append([book, []])
            key = chap
        chapters[-1][1].append(text.strip())
    return [(b, " ".join(v)) for b, v in chapters]


def prep(args):
    import sentencepiece as spm
    os.makedirs(args.work, exist_ok=True)
    chapters = kjv_chapters()
    first_valid = next(i for i, (b, _) in enumerate(chapters) if b == "Col")
    train_kjv = "\n\n".join(t for _, t in chapters[:first_valid])
    others = [open(os.path.join(SHARED, f), encoding="utf-8").read()
              for f in ("pg11_alice_in_wonderland.txt", "pg1342_pride_and_prejudice.txt", "tinyshakespeare.txt",
                        "tinystories_valid_head.txt")]
    with open(os.path.join(args.work, "train.txt"), "w", encoding="utf-8") as f:
        f.write(train_kjv + "\n\n" + "\n\n".join(others))
    spm.SentencePieceTrainer.train(
        input=os.path.join(args.work, "train.txt"), model_prefix=os.path.join(args.work, "tokenizer"),
        vocab_size=args.vocab, model_type="bpe", byte_fallback=True, split_digits=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True,
        character_coverage=1.0, max_sentence_length=1 << 16, num_threads=2, bos_id=1, eos_id=2, unk_id=0,
        pad_id=-1, input_sentence_size=200000, shuffle_input_sentence=True, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.work, "tokenizer.model"))
    for name, text in (("kjv_train", train_kjv), ("other", "\n\n".join(others)),
                       ("kjv_valid", open(os.path.join(SHARED, "kjv-valid.txt"), encoding="utf-8").read())):
        ids = np.array(sp.encode(text), dtype=np.uint16)
        ids.tofile(os.path.join(args.work, name + ".u16"))
        print(f"prep: {name}: {len(ids)} tokens")


# ---------------------------------------------------------------- train

STAGES = [128, 256, 512, 1024, 2048, 4096, 8192]  # stage 0: the induction stage (copying before lookup)


def lr_at(step, args, elapsed_s=0.0):
    if step < args.warmup:  # step counts from the run's start, or from a resumed weights-only checkpoint
        return args.lr * (step + 1) / args.warmup
    # constant after warm-up (the curriculum decides how long each length trains), then, with --cooldown-min, a
    # linear decay to a tenth over the budget's last minutes
    left_min = args.budget_min - elapsed_s / 60
    if args.cooldown_min > 0 and left_min < args.cooldown_min:
        return args.lr * (0.1 + 0.9 * max(0.0, left_min) / args.cooldown_min)
    return args.lr


def step_length(state, args, rng):
    """The sequence length of one step: the stage's, except at the target length with --final-mix, where a quarter of
    the steps train at a quarter of it and a quarter at half (shorter contexts stay learned)."""
    length = STAGES[state["stage"]]
    if args.final_mix and length >= args.target and state["stage"] >= 2:
        r = rng.random()
        return STAGES[state["stage"] - 2] if r < 0.25 else STAGES[state["stage"] - 1] if r < 0.5 else length
    return length


def repeat_accuracy(model, gen, length, n):
    """Top-1 accuracy on the repeated spans (after their first token) of n held-out repeat sequences."""
    model.eval()
    hits = total = 0
    with torch.no_grad():
        for seq, w in gen.repeat_eval_set(length, n):
            pred = model(torch.tensor([seq[:-1]])).argmax(-1)[0].tolist()
            for p in range(1, len(seq)):
                if w[p] == 2.0:
                    total += 1
                    hits += pred[p - 1] == seq[p]
    model.train()
    return hits / max(total, 1)


def evaluate(model, gen, length, n):
    """Exact-match accuracy of the needle answers (digits) on n held-out sequences of `length` tokens."""
    model.eval()
    hits = total = 0
    with torch.no_grad():
        for seq, answers in gen.needle_eval_set(length, n):
            x = torch.tensor([seq[:-1]])
            pred = model(x).argmax(-1)[0].tolist()
            for start, end in answers:  # positions of the answer tokens in seq
                total += 1
                hits += all(pred[p - 1] == seq[p] for p in range(start, end))
    model.train()
    return hits / max(total, 1)


def train(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = tasks.Generator(args.work, seed=args.seed)
    cfg = Config(vocab=gen.vocab_size, dim=args.dim, layers=args.layers, heads=args.heads, kv_heads=args.kv_heads,
                 hidden=args.hidden, rope_base=args.rope_base, max_len=args.target)
    model = Llama(cfg)
    opt = torch.optim.AdamW(model.param_groups(0.1), lr=args.lr, betas=(0.9, 0.95))
    ckpt = os.path.join(args.work, "ckpt.pt")
    state = {"step": 0, "stage": 0, "elapsed": 0.0, "log": []}
    if os.path.exists(ckpt):
        saved = torch.load(ckpt)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        state = saved["state"]
        print(f"train: resumed at step {state['step']} (stage {STAGES[state['stage']]}, {state['elapsed'] / 60:.1f} min)")
    elif args.init:  # a committed weights-only checkpoint (F16): fresh optimizer moments, the warm-up again
        saved = torch.load(args.init)
        model.load_state_dict({k: v.float() for k, v in saved["model"].items()})
        state = saved["state"]
        state["warm_from"] = state["step"]
        print(f"train: from {args.init} at step {state['step']} (stage {STAGES[state['stage']]})")
    log = open(os.path.join(args.work, "train_log.jsonl"), "a")
    t0, elapsed0 = time.time(), state["elapsed"]
    rng = random.Random(args.seed * 1000003 + state["step"])
    while True:
        length = step_length(state, args, rng)
        elapsed = elapsed0 + time.time() - t0
        if elapsed > args.budget_min * 60:
            print("train: wall-clock budget spent")
            break
        batch = max(1, args.batch_tokens // length)
        x, y, w = gen.batch(rng, batch, length, gen.MIX[("induction", "first")[state["stage"]]
                                                       if state["stage"] < 2 else "later"])
        for g in opt.param_groups:
            g["lr"] = lr_at(state["step"] - state.get("warm_from", 0), args, elapsed)
        logits = model(x)
        loss = (F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), reduction="none") *
                w.reshape(-1)).sum() / w.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        state["step"] += 1
        rec = {"step": state["step"], "len": length, "loss": round(loss.item(), 4),
               "min": round((elapsed0 + time.time() - t0) / 60, 2)}
        if state["step"] % args.eval_every == 0:
            length = STAGES[state["stage"]]
            n_eval = max(6, args.eval_n * 256 // length)
            rec["repeat_acc"] = round(repeat_accuracy(model, gen, length, n_eval), 4)
            rec["needle_acc"] = evaluate(model, gen, length, n_eval)
            # the induction stage advances on copying, the others on the needles
            acc = rec["repeat_acc"] if state["stage"] == 0 else rec["needle_acc"]
            print(f"train: step {state['step']} len {length} loss {rec['loss']} repeat {rec['repeat_acc']:.3f} "
                  f"needle {rec['needle_acc']:.2f} ({rec['min']:.1f} min)", flush=True)
            if acc >= args.advance_at and length < args.target:
                state["stage"] += 1
                rec["advance_to"] = STAGES[state["stage"]]
        log.write(json.dumps(rec) + "\n")
        log.flush()
        if state["step"] % args.ckpt_every == 0:
            state["elapsed"] = elapsed0 + time.time() - t0
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": state, "cfg": cfg.__dict__},
                       ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
    state["elapsed"] = elapsed0 + time.time() - t0
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": state, "cfg": cfg.__dict__}, ckpt)


def checkpoint(args):
    """The resumable checkpoint a session may commit (weights in F16 + the curriculum state, no optimizer moments):
    `train --init` continues from it."""
    saved = torch.load(os.path.join(args.work, "ckpt.pt"))
    out = args.out or os.path.join(ROOT, "models", "kjv-4k", "checkpoint.pt")
    torch.save({"model": {k: v.to(torch.float16) for k, v in saved["model"].items()}, "state": saved["state"],
                "cfg": saved["cfg"]}, out)
    print(f"checkpoint: {out} (step {saved['state']['step']}, {os.path.getsize(out) / 2**20:.1f} MiB)")


# ---------------------------------------------------------------- test set

def testset(args):
    """The committed passkey / needle test set: 30 cases per (length, kind), 6 at each of 5 depths, filler from the
    held-out books, seed fixed (the same file every run)."""
    gen = tasks.Generator(args.work, seed=args.seed)
    cases = tasks.test_set(gen, [n for n in STAGES if 1024 <= n <= args.target], trials=6, seed=20261202)
    out = args.out or os.path.join(ROOT, "models", "kjv-4k", "passkey.jsonl")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        for c in cases:
            f.write(json.dumps(c) + "\n")
    print(f"testset: {out}: {len(cases)} cases")


# ---------------------------------------------------------------- export

def export(args):
    saved = torch.load(os.path.join(args.work, "ckpt.pt"))
    cfg = Config(**saved["cfg"])
    out = args.out or os.path.join(args.work, "hf")
    os.makedirs(out, exist_ok=True)
    tensors = {}
    for name, t in saved["model"].items():
        tensors[Llama.hf_name(name)] = t.to(torch.float16).contiguous()
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    json.dump(cfg.hf_config(), open(os.path.join(out, "config.json"), "w"), indent=1)
    write_llama2c_tokenizer(os.path.join(args.work, "tokenizer.model"), os.path.join(out, "tokenizer.bin"))
    print(f"export: {out} (step {saved['state']['step']})")


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, t in tensors.items():
        n = t.numel() * t.element_size()
        header[name] = {"dtype": "F16", "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * ((8 - len(blob) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for t in tensors.values():
            f.write(t.numpy().tobytes())


def write_llama2c_tokenizer(model_path, out):
    """llama2.c tokenizer.bin: int32 max_token_length, then per id float32 score, int32 length, bytes ('▁' -> ' ')."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=model_path)
    pieces = []
    for i in range(sp.get_piece_size()):
        p = sp.id_to_piece(i)
        if i == sp.bos_id():
            p = "\n<s>\n"
        elif i == sp.eos_id():
            p = "\n</s>\n"
        pieces.append((sp.get_score(i), p.replace("\u2581", " ").encode("utf-8")))
    with open(out, "wb") as f:
        f.write(struct.pack("<i", max(len(b) for _, b in pieces)))
        for score, b in pieces:
            f.write(struct.pack("<fi", score, len(b)))
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=["prep", "train", "checkpoint", "testset", "export"])
    ap.add_argument("--init", default="", help="train: start from a `checkpoint` file when --work has none")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "train-kjv-4k"))
    ap.add_argument("--out", default="")
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=704)
    ap.add_argument("--rope-base", type=float, default=500000.0)
    ap.add_argument("--target", type=int, default=4096)
    ap.add_argument("--batch-tokens", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-n", type=int, default=16)
    ap.add_argument("--advance-at", type=float, default=0.9)
    ap.add_argument("--ckpt-every", type=int, default=50)
    ap.add_argument("--budget-min", type=float, default=240)
    ap.add_argument("--cooldown-min", type=float, default=0, help="train: decay the learning rate over the budget's last minutes")
    ap.add_argument("--final-mix", action="store_true", help="train: at the target length, also train at 1/4 and 1/2 of it")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    {"prep": prep, "train": train, "checkpoint": checkpoint, "testset": testset, "export": export}[args.stage](args)


if __name__ == "__main__":
    main()
