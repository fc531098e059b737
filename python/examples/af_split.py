#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attention-FFN separation from PyTorch, with sysHAX.

A small Llama-shaped decoder (random weights, seeded) decodes greedily
twice:

* **torch**: the whole model in PyTorch (f32);
* **split**: attention in PyTorch, over a KV cache that lives in syshax
  buffers (torch views of pinned memory, vLLM's paged layout), and every
  layer's FFN block (RMSNorm, SwiGLU or the MoE experts, residual) run by
  syshaxd's CPU engine as an FFN or MOE job on the hidden state, in place
  in a syshax buffer the PyTorch code reads and writes through a view.
  The FFN weights go to the engine once, with WEIGHTS_LOAD.

Both runs see the same prompt and pick their own greedy tokens; the
script compares the logits at every step and the tokens, prints tokens/s
for both and the time the split run spent waiting for jobs, and exits 1
when the logits differ by more than the tolerance or a token differs.

Tolerance: max |split - torch| / std(torch logits) <= 1e-4 per step. The
weights stay f32 in the engine (QUANT_NONE) and the activations are f32
on both sides, so the two compute the same function and differ only in
the order of f32 sums (the engine's blocked GEMMs and its split over NUMA
pools against PyTorch's BLAS): about 1e-6 of the logits' spread, as the
engine's f32 comparison with llama.cpp found (docs/model-runner.md). The
tolerance leaves a hundred times that.

    syshaxd --foreground --socket /tmp/s.sock &
    SYSHAX_DEVICE=/tmp/s.sock python3 python/examples/af_split.py [--moe]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional

import numpy as np
import torch

import syshax
from syshax import ops

TOLERANCE = 1e-4


@dataclass
class Config:
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int            # FFN width (each expert's for MoE)
    experts: int = 0    # 0: dense
    topk: int = 0
    eps: float = 1e-5
    rope_base: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


PRESETS = {
    "tiny": Config(vocab=512, hidden=128, layers=2, heads=4, kv_heads=2,
                   ffn=256),
    "small": Config(vocab=4096, hidden=512, layers=6, heads=8, kv_heads=4,
                    ffn=1408),
}


def make_weights(cfg: Config, seed: int) -> Dict[str, torch.Tensor]:
    """GGUF-named f32 weights (PyTorch shapes: [out, in]), std
    1/sqrt(inputs) so activations stay O(1) through the layers."""
    g = np.random.default_rng(seed)

    def mat(rows: int, cols: int, *lead: int, scale: float = 1.0):
        a = g.standard_normal((*lead, rows, cols)) * scale / math.sqrt(cols)
        return torch.from_numpy(a.astype(np.float32))

    def norm(n: int):
        return torch.from_numpy((1 + 0.1 * g.standard_normal(n))
                                .astype(np.float32))

    H, D = cfg.hidden, cfg.head_dim
    w = {"token_embd.weight": torch.from_numpy(
            g.standard_normal((cfg.vocab, H)).astype(np.float32)),
         "output_norm.weight": norm(H),
         "output.weight": mat(cfg.vocab, H, scale=3.0)}
    for i in range(cfg.layers):
        b = f"blk.{i}."
        w[b + "attn_norm.weight"] = norm(H)
        w[b + "attn_q.weight"] = mat(cfg.heads * D, H)
        w[b + "attn_k.weight"] = mat(cfg.kv_heads * D, H)
        w[b + "attn_v.weight"] = mat(cfg.kv_heads * D, H)
        w[b + "attn_output.weight"] = mat(H, cfg.heads * D, scale=0.5)
        w[b + "ffn_norm.weight"] = norm(H)
        if cfg.experts:
            E = cfg.experts
            w[b + "ffn_gate_inp.weight"] = mat(E, H)
            w[b + "ffn_gate_exps.weight"] = mat(cfg.ffn, H, E)
            w[b + "ffn_up_exps.weight"] = mat(cfg.ffn, H, E)
            w[b + "ffn_down_exps.weight"] = mat(H, cfg.ffn, E, scale=0.5)
        else:
            w[b + "ffn_gate.weight"] = mat(cfg.ffn, H)
            w[b + "ffn_up.weight"] = mat(cfg.ffn, H)
            w[b + "ffn_down.weight"] = mat(H, cfg.ffn, scale=0.5)
    return w


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def swiglu(h, gate, up, down):
    return torch.nn.functional.silu(h @ gate.T) * (h @ up.T) @ down.T


def torch_ffn(cfg: Config, w: Dict[str, torch.Tensor]):
    """The FFN block in PyTorch: x += FFN(rmsnorm(x)), in place."""
    def ffn(layer: int, x: torch.Tensor) -> None:
        b = f"blk.{layer}."
        h = rmsnorm(x, w[b + "ffn_norm.weight"], cfg.eps)
        if not cfg.experts:
            x += swiglu(h, w[b + "ffn_gate.weight"], w[b + "ffn_up.weight"],
                        w[b + "ffn_down.weight"])
            return
        # Qwen3-MoE routing, as the engine's MOE_ROUTE_ROUTER with
        # MOE_NORM_TOPK: softmax over all experts, top-k, renormalized.
        p = torch.softmax(h @ w[b + "ffn_gate_inp.weight"].T, -1)
        top, ids = torch.topk(p, cfg.topk, -1)
        top = top / top.sum(-1, keepdim=True)
        for t in range(x.shape[0]):
            for e, we in zip(ids[t].tolist(), top[t]):
                x[t] += we * swiglu(h[t:t + 1],
                                    w[b + "ffn_gate_exps.weight"][e],
                                    w[b + "ffn_up_exps.weight"][e],
                                    w[b + "ffn_down_exps.weight"][e])[0]
    return ffn


class Model:
    """The decoder in PyTorch, with its FFN block and its memory (KV cache
    and hidden state) given from outside: PyTorch's or syshax's."""

    BLOCK = 16  # positions per KV block (vLLM's layout)

    def __init__(self, cfg: Config, w: Dict[str, torch.Tensor],
                 ffn: Callable[[int, torch.Tensor], None],
                 k_cache: torch.Tensor, v_cache: torch.Tensor,
                 x: torch.Tensor) -> None:
        self.cfg, self.w, self.ffn = cfg, w, ffn
        # [layers, num_blocks, BLOCK, kv_heads, head_dim]; one sequence
        # whose block table is 0, 1, 2, ...: position p is flat row p.
        self.k, self.v, self.x = k_cache, v_cache, x
        D = cfg.head_dim
        inv = 1.0 / cfg.rope_base ** (torch.arange(0, D, 2).float() / D)
        ang = torch.outer(torch.arange(k_cache.shape[1] * self.BLOCK)
                          .float(), inv)
        self.cos, self.sin = ang.cos(), ang.sin()

    def rope(self, t: torch.Tensor, pos: int) -> torch.Tensor:
        # NeoX halves: (a, b) -> (a cos - b sin, b cos + a sin).
        a, b = t[..., : t.shape[-1] // 2], t[..., t.shape[-1] // 2:]
        c, s = self.cos[pos], self.sin[pos]
        return torch.cat([a * c - b * s, b * c + a * s], -1)

    def step(self, token: int, pos: int) -> torch.Tensor:
        cfg, w, x = self.cfg, self.w, self.x
        Hq, Hkv, D = cfg.heads, cfg.kv_heads, cfg.head_dim
        x[0] = w["token_embd.weight"][token]
        for i in range(cfg.layers):
            b = f"blk.{i}."
            h = rmsnorm(x, w[b + "attn_norm.weight"], cfg.eps)
            q = self.rope((h @ w[b + "attn_q.weight"].T).view(Hq, D), pos)
            k = self.rope((h @ w[b + "attn_k.weight"].T).view(Hkv, D), pos)
            v = (h @ w[b + "attn_v.weight"].T).view(Hkv, D)
            kc = self.k[i].view(-1, Hkv, D)
            vc = self.v[i].view(-1, Hkv, D)
            kc[pos], vc[pos] = k, v
            keys = kc[: pos + 1].repeat_interleave(Hq // Hkv, 1)
            vals = vc[: pos + 1].repeat_interleave(Hq // Hkv, 1)
            att = torch.einsum("hd,thd->ht", q, keys) / math.sqrt(D)
            o = torch.einsum("ht,thd->hd", torch.softmax(att, -1), vals)
            x += o.reshape(1, Hq * D) @ w[b + "attn_output.weight"].T
            self.ffn(i, x)
        h = rmsnorm(x, w["output_norm.weight"], cfg.eps)
        return (h @ w["output.weight"].T)[0]


def kv_shape(cfg: Config, positions: int):
    blocks = -(-positions // Model.BLOCK)
    return (cfg.layers, blocks, Model.BLOCK, cfg.kv_heads, cfg.head_dim)


@dataclass
class Run:
    tokens: List[int]
    logits: List[torch.Tensor]
    seconds: float
    wait_s: float = 0.0
    engine_s: float = 0.0


def decode(model: Model, prompt: List[int], steps: int,
           timer: Optional[Dict[str, float]] = None) -> Run:
    """Feeds the prompt, then `steps` greedy tokens; times the steps."""
    logits = None
    for pos, t in enumerate(prompt):
        logits = model.step(t, pos)
    if timer:
        timer["wait"] = timer["engine"] = 0.0
    out, seen = [], []
    t0 = time.perf_counter()
    for s in range(steps):
        tok = int(torch.argmax(logits))
        out.append(tok)
        seen.append(logits.clone())
        logits = model.step(tok, len(prompt) + s)
    return Run(out, seen, time.perf_counter() - t0,
               timer["wait"] if timer else 0.0,
               timer["engine"] if timer else 0.0)


def run_torch(cfg: Config, w, prompt: List[int], steps: int) -> Run:
    shape = kv_shape(cfg, len(prompt) + steps)
    model = Model(cfg, w, torch_ffn(cfg, w), torch.zeros(shape),
                  torch.zeros(shape), torch.zeros(1, cfg.hidden))
    return decode(model, prompt, steps)


def run_split(sh: syshax.Context, cfg: Config, w, prompt: List[int],
              steps: int) -> Run:
    """Attention here, FFN/MoE in syshaxd, KV and hidden state in syshax
    buffers."""
    ffn_w = {k: v for k, v in w.items() if ".ffn_" in k}
    shape = kv_shape(cfg, len(prompt) + steps)
    kv_bytes = 4 * math.prod(shape)
    timer = {"wait": 0.0, "engine": 0.0}
    with syshax.load_weights(sh, ffn_w) as ws, \
            sh.alloc(kv_bytes) as kbuf, sh.alloc(kv_bytes) as vbuf, \
            sh.alloc(4 * cfg.hidden) as act:
        x = act.torch(torch.float32, (1, cfg.hidden))
        x_ref = act.ref_of(x)
        if cfg.experts:
            flags = (syshax.MOE_NORM | syshax.MOE_RESIDUAL |
                     syshax.MOE_NORM_TOPK)
            jobs = [ops.moe(x_ref, x_ref, wset=ws.id, layer=i, m=1,
                            topk=cfg.topk, flags=flags, eps=cfg.eps)
                    for i in range(cfg.layers)]
        else:
            flags = syshax.FFN_NORM | syshax.FFN_RESIDUAL
            jobs = [ops.ffn(x_ref, x_ref, wset=ws.id, layer=i, m=1,
                            flags=flags, eps=cfg.eps)
                    for i in range(cfg.layers)]

        def engine_ffn(layer: int, _x: torch.Tensor) -> None:
            # The job reads and writes the buffer `x` views: no copies.
            t0 = time.perf_counter()
            (c,) = sh.run(jobs[layer])
            timer["wait"] += time.perf_counter() - t0
            timer["engine"] += c.exec_ns * 1e-9

        model = Model(cfg, w, engine_ffn,
                      kbuf.torch(torch.float32, shape),
                      vbuf.torch(torch.float32, shape), x)
        r = decode(model, prompt, steps, timer)
        del model, x
    return r


def compare(a: Run, b: Run) -> Dict[str, float]:
    diffs = [float((x - y).abs().max() / x.std())
             for x, y in zip(a.logits, b.logits)]
    margins = [float(t[0] - t[1]) / float(x.std()) for x in a.logits
               for t in [torch.topk(x, 2).values]]
    return {"max_diff": max(diffs), "median_diff": float(np.median(diffs)),
            "min_top2_margin": min(margins)}


def main(argv: Optional[List[str]] = None) -> Dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=PRESETS, default="small")
    ap.add_argument("--moe", action="store_true",
                    help="8 experts, top-2 (Qwen3-MoE routing)")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, help="instead of the preset's")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    cfg = replace(PRESETS[args.preset])
    if args.layers:
        cfg.layers = args.layers
    if args.moe:
        cfg.experts, cfg.topk, cfg.ffn = 8, 2, cfg.ffn // 4
    w = make_weights(cfg, args.seed)
    prompt = [(args.seed * 7 + 13 * i) % cfg.vocab for i in range(8)]
    with torch.inference_mode():
        ref = run_torch(cfg, w, prompt, args.steps)
        with syshax.open() as sh:
            split = run_split(sh, cfg, w, prompt, args.steps)
    res = {"model": f"{args.preset}{' moe' if cfg.experts else ''}",
           "layers": cfg.layers, "hidden": cfg.hidden, "steps": args.steps,
           "torch_tok_s": args.steps / ref.seconds,
           "split_tok_s": args.steps / split.seconds,
           "wait_s": split.wait_s, "engine_s": split.engine_s,
           "split_s": split.seconds, "tolerance": TOLERANCE,
           "same_tokens": ref.tokens == split.tokens,
           "tokens": split.tokens, **compare(ref, split)}
    res["ok"] = res["same_tokens"] and res["max_diff"] <= TOLERANCE
    if args.json:
        print(json.dumps(res))
    else:
        print(f"model: {res['model']}, {cfg.layers} layers, hidden "
              f"{cfg.hidden}, {args.steps} greedy steps")
        print(f"pytorch alone: {res['torch_tok_s']:8.1f} tokens/s")
        print(f"split:         {res['split_tok_s']:8.1f} tokens/s; "
              f"waiting for jobs {res['wait_s']:.3f} s of "
              f"{res['split_s']:.3f} s (engine ran them "
              f"{res['engine_s']:.3f} s)")
        print(f"logits: max |split - torch| / std = {res['max_diff']:.2e} "
              f"(median {res['median_diff']:.2e}), tolerance {TOLERANCE:g}; "
              f"tokens {'equal' if res['same_tokens'] else 'DIFFER'}")
        print("tokens:", " ".join(map(str, split.tokens)))
        print("OK" if res["ok"] else "FAIL")
    return res


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
