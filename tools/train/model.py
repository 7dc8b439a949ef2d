"""The long-context test model for train.py: a Llama (RMSNorm, rotate-half RoPE as Hugging Face's Llama, SwiGLU,
GQA, no biases, output tied to the embedding), with attention written plainly (torch 1.13 has no fused kernel).
Parameter names map 1:1 to Hugging Face's LlamaForCausalLM (hf_name), which slimkv's loader reads."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    def __init__(self, vocab, dim, layers, heads, kv_heads, hidden, rope_base, max_len, eps=1e-5):
        self.vocab, self.dim, self.layers, self.heads, self.kv_heads = vocab, dim, layers, heads, kv_heads
        self.hidden, self.rope_base, self.max_len, self.eps = hidden, rope_base, max_len, eps

    @property
    def head_dim(self):
        return self.dim // self.heads

    def hf_config(self):
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": self.dim,
                "intermediate_size": self.hidden, "num_attention_heads": self.heads,
                "num_key_value_heads": self.kv_heads, "num_hidden_layers": self.layers, "head_dim": self.head_dim,
                "rms_norm_eps": self.eps, "rope_theta": self.rope_base, "vocab_size": self.vocab,
                "max_position_embeddings": self.max_len, "tie_word_embeddings": True, "bos_token_id": 1,
                "eos_token_id": 2, "torch_dtype": "float16"}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, length):
    inv = 1.0 / (cfg.rope_base ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim))
    ang = torch.outer(torch.arange(length, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().float(), emb.sin().float()  # [length, head_dim]


def rotate(x, cos, sin):  # x: [B, H, T, D]; rotate-half (HF)
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, hd = cfg.dim, cfg.head_dim
        self.cfg = cfg
        self.input_layernorm = RMSNorm(d, cfg.eps)
        self.q_proj = nn.Linear(d, cfg.heads * hd, bias=False)
        self.k_proj = nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(cfg.heads * hd, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, cfg.eps)
        self.gate_proj = nn.Linear(d, cfg.hidden, bias=False)
        self.up_proj = nn.Linear(d, cfg.hidden, bias=False)
        self.down_proj = nn.Linear(cfg.hidden, d, bias=False)

    def attention(self, x, cos, sin, mask):
        B, T, _ = x.shape
        c, hd = self.cfg, self.cfg.head_dim
        q = self.q_proj(x).view(B, T, c.heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, c.kv_heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, c.kv_heads, hd).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rep = c.heads // c.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)  # head h reads KV head h // rep
        # scores = mask + q k^T / sqrt(hd) in one op (the [B*H, T, T] matrix is the long-context cost)
        att = torch.baddbmm(mask.expand(B * c.heads, T, T), q.reshape(B * c.heads, T, hd),
                            k.reshape(B * c.heads, T, hd).transpose(1, 2), alpha=1.0 / math.sqrt(hd))
        out = F.softmax(att, dim=-1).view(B, c.heads, T, T) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, c.heads * hd))

    def forward(self, x, cos, sin, mask):
        x = x + self.attention(self.input_layernorm(x), cos, sin, mask)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.eps)
        nn.init.normal_(self.embed_tokens.weight, std=0.02)
        for blk in self.layers:
            for lin in (blk.q_proj, blk.k_proj, blk.v_proj, blk.gate_proj, blk.up_proj):
                nn.init.normal_(lin.weight, std=0.02)
            for lin in (blk.o_proj, blk.down_proj):  # scaled residual projections (GPT-2)
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * cfg.layers))
        self._rope_len = 0

    def forward(self, ids):
        T = ids.shape[1]
        if T > self._rope_len:
            self.cos, self.sin = rope_tables(self.cfg, T)
            self._rope_len = T
        cos, sin = self.cos[:T], self.sin[:T]
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.embed_tokens(ids)
        for blk in self.layers:
            x = blk(x, cos, sin, mask)
        return self.norm(x) @ self.embed_tokens.weight.t()

    def param_groups(self, weight_decay):
        decay = [p for n, p in self.named_parameters() if p.dim() >= 2]
        rest = [p for n, p in self.named_parameters() if p.dim() < 2]
        return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]

    @staticmethod
    def hf_name(name):
        """This module's parameter name -> Hugging Face LlamaForCausalLM's."""
        if name.startswith("layers."):
            _, i, rest = name.split(".", 2)
            attn = ("q_proj", "k_proj", "v_proj", "o_proj")
            mlp = ("gate_proj", "up_proj", "down_proj")
            part = rest.split(".")[0]
            prefix = "self_attn." if part in attn else "mlp." if part in mlp else ""
            return f"model.layers.{i}.{prefix}{rest}"
        return "model." + name
