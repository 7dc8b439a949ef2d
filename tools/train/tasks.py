"""The training mix of the long-context test model (train.py): plain text windows and synthetic long-range tasks,
built as text and tokenized whole (so a prompt tokenizes the same way in training as at test time), with the answer
tokens located by character offsets and weighted up in the loss. Also the held-out needle sets (validation text as
filler) for the curriculum's checks and the committed test set.

Tasks, in the format of ../shared/data/passkey-kjv.jsonl:
  needles: 1-4 facts "The secret number of NAME is DIGITS." at sentence boundaries of filler text, then 1-3
           questions "What is the secret number of NAME? The secret number of NAME is DIGITS." about some of them
  recall:  2-8 such facts (fewer at 256 tokens), every one asked, in random order (a dense lookup signal)
  repeat:  a span of random pieces written 2-4 times in plain text (the plain induction task)
  copy:    a span of filler (12-48 words) repeated later, the repeat weighted up (an induction signal)
"""
import os
import random

NAMES = ("Babylon Jericho Bethel Hebron Samaria Zion Gilead Bashan Sharon Carmel Tyre Sidon Damascus Nineveh Gaza "
         "Ashdod Ekron Gath Shiloh Gibeah Ramah Mizpeh Beersheba Dan Judah Benjamin Ephraim Manasseh Reuben Simeon "
         "Levi Issachar Zebulun Naphtali Asher Gad Moab Edom Ammon Egypt Assyria Persia Media Elam Sheba Ophir "
         "Tarshish Lebanon Hermon Sinai Horeb Jordan Kidron Bethlehem Nazareth Capernaum Galilee Emmaus Joppa "
         "Caesarea Antioch Ephesus Corinth Philippi Athens Rome Crete Cyprus Tarsus Lystra Derbe").split()
ANSWER_WEIGHT = 5.0


class Generator:
    def __init__(self, work, seed=0):
        import numpy as np
        import sentencepiece as spm
        self.sp = spm.SentencePieceProcessor(model_file=os.path.join(work, "tokenizer.model"))
        self.vocab_size = self.sp.get_piece_size()
        self.train_text = open(os.path.join(work, "train.txt"), encoding="utf-8").read()
        shared = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")
        self.valid_text = open(os.path.join(shared, "kjv-valid.txt"), encoding="utf-8").read()
        self.plain = [np.fromfile(os.path.join(work, n + ".u16"), dtype=np.uint16) for n in ("kjv_train", "other")]
        self.chars_per_token = len(self.train_text) / sum(len(p) for p in self.plain)
        self.seed = seed

    # ------------------------------------------------------------ text pieces

    def filler(self, rng, text, n_chars):
        """About n_chars of text starting at a sentence start, as a list of sentences."""
        start = rng.randrange(0, max(1, len(text) - n_chars - 1000))
        start = text.find(". ", start) + 2
        chunk = text[start:start + n_chars]
        return [s + "." for s in chunk.split(". ") if s][:-1] or [chunk]

    @staticmethod
    def number(rng):
        digits = rng.randint(4, 6)
        return str(rng.randrange(10 ** (digits - 1), 10 ** digits))

    def needle_text(self, rng, text, n_tokens, depths=None, n_needles=None, n_questions=None):
        """(text, [answer char spans]) of about n_tokens tokens: facts in filler, questions at the end."""
        k = n_needles or rng.choice([1, 1, 2, 3, 4])
        names = rng.sample(NAMES, k)
        numbers = [self.number(rng) for _ in names]
        tail_chars = 80 * (n_questions or 3)
        # 85% of the budget: the rest is padded at the front, so a cut never drops a fact
        sents = self.filler(rng, text, int(0.85 * n_tokens * self.chars_per_token) - 60 * k - tail_chars)
        for j, (name, num) in enumerate(zip(names, numbers)):
            d = depths[j] if depths else rng.random()
            sents.insert(int(round(d * len(sents))), f"The secret number of {name} is {num}.")
        body = " ".join(sents)
        asked = rng.sample(range(k), n_questions or rng.randint(1, k))
        spans = []
        for i in asked:
            body += f" What is the secret number of {names[i]}? The secret number of {names[i]} is "
            spans.append((len(body), len(body) + len(numbers[i])))
            body += numbers[i] + "."
        return body, spans

    def copy_text(self, rng, text, n_tokens):
        words = self.filler(rng, text, int(n_tokens * self.chars_per_token))
        body = " ".join(words)
        w = body.split(" ")
        if len(w) < 40:
            return body, []
        n = min(rng.randint(12, 48), len(w) // 2 - 2)
        i = rng.randrange(0, len(w) // 2 - n)
        span = " ".join(w[i:i + n])
        j = rng.randrange(len(w) // 2, len(w) - 1)
        before = " ".join(w[:j]) + " "
        return before + span + " " + " ".join(w[j:]), [(len(before), len(before) + len(span))]

    # ------------------------------------------------------------ tokens

    def tokens(self, text, spans, length, rng=None):
        """BOS + exactly `length` tokens ending with the text's end (cut or padded at the front), and per-token
        weights (ANSWER_WEIGHT on tokens inside the answer spans)."""
        proto = self.sp.encode(text, out_type="immutable_proto")
        ids = [p.id for p in proto.pieces]
        weights = [1.0] * len(ids)
        for a, b in spans:
            for t, p in enumerate(proto.pieces):
                if p.begin < b and p.end > a:
                    weights[t] = ANSWER_WEIGHT
        if len(ids) > length:
            ids, weights = ids[-length:], weights[-length:]
        elif len(ids) < length:
            src = self.plain[0]
            at = (rng or random.Random(len(text))).randrange(0, len(src) - length)
            pad = src[at:at + length - len(ids)].tolist()
            ids, weights = pad + ids, [1.0] * len(pad) + weights
        return [1] + ids, [0.0] + weights

    def repeat_tokens(self, rng, length):
        """Plain text with one span of random vocabulary pieces (16-64) written 2-4 times (an induction task: every
        repeat after the first is predictable only by copying), the repeats weighted x2 but their first token."""
        span = [rng.randrange(259, self.vocab_size) for _ in range(rng.randint(16, 64))]  # past byte pieces
        times = rng.randint(2, 4)
        gaps = [rng.randint(0, max(0, (length - times * len(span)) // times)) for _ in range(times)]
        src = self.plain[0]
        ids, w = [], []
        for i, gap in enumerate(gaps):
            at = rng.randrange(0, len(src) - gap - 1)
            ids += src[at:at + gap].tolist()
            w += [1.0] * gap
            ids += span
            w += [1.0] + [2.0 if i else 1.0] * (len(span) - 1)
        ids, w = ids[:length], w[:length]
        if len(ids) < length:
            at = rng.randrange(0, len(src) - length)
            ids += src[at:at + length - len(ids)].tolist()
            w += [1.0] * (length - len(w))
        return [1] + ids, [0.0] + w

    def plain_tokens(self, rng, length):
        src = self.plain[0] if rng.random() < 0.6 else self.plain[1]
        i = rng.randrange(0, len(src) - length - 1)
        return [1] + src[i:i + length].tolist(), [0.0] + [1.0] * length

    # shares of each kind of sequence (the rest is plain text): needles, dense recall, copy, repeat
    MIX = {"induction": (0.10, 0.20, 0.10, 0.50), "first": (0.25, 0.25, 0.10, 0.20),
           "later": (0.30, 0.20, 0.10, 0.10)}

    def batch(self, rng, batch, length, mix):
        xs, ys, ws = [], [], []
        import numpy as np  # (imported where used: the test-set code below runs without numpy and torch)
        edges = np.cumsum(mix)
        for _ in range(batch):
            r = rng.random()
            if r < edges[0]:
                seq, w = self.tokens(*self.needle_text(rng, self.train_text, length), length, rng)
            elif r < edges[1]:  # dense recall: every fact asked, in random order
                k = rng.randint(2, min(8, length // 64 + 1))
                seq, w = self.tokens(*self.needle_text(rng, self.train_text, length, n_needles=k, n_questions=k),
                                     length, rng)
            elif r < edges[2]:
                seq, w = self.tokens(*self.copy_text(rng, self.train_text, length), length, rng)
            elif r < edges[3]:
                seq, w = self.repeat_tokens(rng, length)
            else:
                seq, w = self.plain_tokens(rng, length)
            xs.append(seq[:-1])
            ys.append(seq[1:])
            ws.append(w[1:])
        import torch
        return torch.tensor(xs), torch.tensor(ys), torch.tensor(ws)

    # ------------------------------------------------------------ held out

    def repeat_eval_set(self, length, n):
        """n held-out repeat sequences (fixed seed): (BOS + tokens, weights); the x2 tokens are the scored ones."""
        rng = random.Random(2000 + length)
        return [self.repeat_tokens(rng, length) for _ in range(n)]

    def needle_eval_set(self, length, n):
        """n held-out sequences (validation filler, fixed seed): (BOS + tokens, [(start, end) answer positions])."""
        rng = random.Random(1000 + length)
        out = []
        for _ in range(n):
            text, spans = self.needle_text(rng, self.valid_text, length)
            seq, w = self.tokens(text, spans, length)
            answers, t = [], 0
            while t < len(w):
                if w[t] == ANSWER_WEIGHT:
                    s = t
                    while t < len(w) and w[t] == ANSWER_WEIGHT:
                        t += 1
                    answers.append((s, t))
                t += 1
            out.append((seq, answers))
        return out


# ---------------------------------------------------------------- the committed test set

TEST_DEPTHS = (0.1, 0.3, 0.5, 0.7, 0.9)


def test_case(gen, rng, kind, length, depth):
    """One held-out case of about `length` tokens (BOS + prompt + 8 generated tokens fit in `length`):
    kind "passkey": one fact at `depth`; kind "needle": four facts, the asked one at `depth`, the others anywhere."""
    k = 1 if kind == "passkey" else 4
    depths = [depth] + [rng.random() for _ in range(k - 1)]
    names = rng.sample(NAMES, k)
    numbers = [gen.number(rng) for _ in names]
    facts = [f"The secret number of {name} is {num}." for name, num in zip(names, numbers)]
    budget = length - 9  # BOS + prompt + 8 new tokens <= length
    filler = " ".join(gen.filler(rng, gen.valid_text, int(1.5 * budget * gen.chars_per_token))).split(" ")

    def build(n_words):  # the last n_words of filler, each fact after the sentence end nearest its depth
        words = filler[-n_words:]
        ends = [0] + [i + 1 for i, w in enumerate(words) if w.endswith(".")]
        pieces = list(words)
        for fact, d in sorted(zip(facts, depths), key=lambda fd: -fd[1]):
            pieces.insert(min(ends, key=lambda e: abs(e - d * len(words))), fact)
        prompt = " ".join(pieces) + f" What is the secret number of {names[0]}? The secret number of {names[0]} is"
        return prompt, len(gen.sp.encode(prompt))

    lo, hi = 1, len(filler)  # the most filler words that fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if build(mid)[1] <= budget:
            lo = mid
        else:
            hi = mid - 1
    prompt, n = build(lo)
    assert budget - 32 <= n <= budget, (kind, length, n)
    answer = numbers[0]
    ids = gen.sp.encode(prompt)
    assert ids == gen.sp.encode(prompt + " " + answer + ".")[:len(ids)], "the prompt must tokenize as its prefix"
    return {"context_tokens": length, "kind": kind, "depth": depth, "prompt": prompt, "answer": answer,
            "needle": facts[0], "actual_depth": round(prompt.index(facts[0]) / len(prompt), 3),
            "prompt_n_tokens": n}


def test_set(gen, lengths, trials, seed):
    """trials cases per (length, kind, depth): a fixed seed gives the same file."""
    rng = random.Random(seed)
    out = []
    for length in lengths:
        for kind in ("passkey", "needle"):
            for depth in TEST_DEPTHS:
                for trial in range(trials):
                    case = test_case(gen, rng, kind, length, depth)
                    case["trial"] = trial
                    out.append(case)
    return out
