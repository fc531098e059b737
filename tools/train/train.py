#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Train sysHAX's toy models on the King James Bible (docs/model-train.md).

One byte-level BPE tokenizer (GGUF "gpt2" form, llama.cpp's "qwen2"
pre-tokenizer, ChatML specials) and two tiny models trained on the same
text: a dense llama (RoPE on adjacent pairs, as llama.cpp's llama arch
applies it) and a qwen3moe (8 experts, top-2, q/k RMSNorm, NEOX RoPE).
Each model goes to OUT/<name>/: model.safetensors (F16 matrices with
Hugging Face names, F32 norms; q/k rows in GGUF's order), config.json,
tokenizer.json; OUT/heldout.txt and heldout.ids are the held-out text and
its token ids; OUT/<name>/loss.png its loss curves. syshax-convert(1) makes the
GGUF files. Deterministic for a seed and a thread count.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time

import numpy as np
import regex
import torch
import torch.nn.functional as F

# llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2 pre-tokenizer, exactly.
PRE = "qwen2"
PRE_RE = regex.compile(
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# ChatML as Qwen writes it; llama.cpp recognises it by "<|im_start|>".
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}")

MODELS = {
    "kjv-llama": dict(arch="llama", n_layer=6, n_embd=256, n_head=8,
                      n_head_kv=2, head_dim=32, n_ff=512, rope_base=1e4,
                      rms_eps=1e-5),
    "kjv-qwen3moe": dict(arch="qwen3moe", n_layer=4, n_embd=256, n_head=8,
                         n_head_kv=2, head_dim=32, n_ff=256, n_expert=8,
                         n_expert_used=2, rope_base=1e4, rms_eps=1e-6),
}


def log(*a):
    print(*a, flush=True)


# ---- corpus ----

def read_corpus(path):
    """Chapters of the KJV as `bible` prints them: "Book N" headers, then
    "  V text" verses wrapped onto further lines. Each chapter becomes its
    header and one verse a line, without verse numbers."""
    if path:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    else:
        raw = subprocess.run(["bible", "gen1:1-rev22:21"], check=True,
                             capture_output=True, text=True).stdout
    chapters, cur, verse = [], None, None
    for line in raw.split("\n"):
        m = regex.match(r"^  (\d+) (.*)$", line)
        if m:
            if verse is not None:
                cur.append(verse)
            verse = m.group(2).strip()
        elif line and not line.startswith(" ") and regex.match(
                r"^(\d )?[A-Z][A-Za-z ]+ \d+$", line):
            if verse is not None:
                cur.append(verse)
            verse, cur = None, [line]
            chapters.append(cur)
        elif line.strip() and verse is not None:
            verse += " " + line.strip()
    if verse is not None:
        cur.append(verse)
    if len(chapters) < 100:
        sys.exit("train.py: the corpus has %d chapters: not the KJV as "
                 "`bible` prints it" % len(chapters))
    return ["\n".join(c) + "\n" for c in chapters]


# ---- tokenizer ----

def byte_chars():
    """GPT-2's bytes-to-unicode map: printable bytes stand for themselves,
    the others for code points from 256 up."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
          list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2C = byte_chars()


def pieces(text):
    return [''.join(B2C[b] for b in w.encode("utf-8"))
            for w in PRE_RE.findall(text)]


def train_bpe(texts, n_vocab):
    """Merges until n_vocab tokens (256 bytes + merges + specials); ties
    broken by the pair's strings, so the result is one for the text."""
    counts = {}
    for t in texts:
        for w in pieces(t):
            counts[w] = counts.get(w, 0) + 1
    words = [list(w) for w in counts]
    freq = list(counts.values())
    pairs, where = {}, {}
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            pairs[p] = pairs.get(p, 0) + freq[i]
            where.setdefault(p, set()).add(i)
    merges = []
    while 256 + len(merges) + len(SPECIALS) < n_vocab and pairs:
        best = max(pairs, key=lambda p: (pairs[p], p))
        if pairs[best] < 2:
            break
        merges.append(best)
        a, b = best
        for i in sorted(where.pop(best, ())):
            w, f = words[i], freq[i]
            for p in zip(w, w[1:]):
                pairs[p] -= f
            j, out = 0, []
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pairs[p] = pairs.get(p, 0) + f
                where.setdefault(p, set()).add(i)
        pairs = {p: c for p, c in pairs.items() if c > 0}
    tokens = [B2C[b] for b in range(256)] + [a + b for a, b in merges]
    return tokens + SPECIALS, merges


class Tokenizer:
    def __init__(self, tokens, merges):
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.rank = {p: r for r, p in enumerate(merges)}
        self.cache = {}

    def word(self, w):
        if w in self.cache:
            return self.cache[w]
        s = list(w)
        while len(s) > 1:
            r, j = min((self.rank.get(p, 1 << 30), j)
                       for j, p in enumerate(zip(s, s[1:])))
            if r == 1 << 30:
                break
            s[j:j + 2] = [s[j] + s[j + 1]]
        ids = [self.ids[t] for t in s]
        self.cache[w] = ids
        return ids

    def encode(self, text):
        return [i for w in pieces(text) for i in self.word(w)]


# ---- models ----

def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, base, neox):
    """x [B, T, H, D]: llama.cpp's rotation, NEOX (halves) or normal
    (adjacent pairs)."""
    T, D = x.shape[1], x.shape[3]
    inv = base ** (-torch.arange(0, D, 2, dtype=torch.float32) / D)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]
    if neox:
        a, b = x[..., :D // 2], x[..., D // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos],
                       -1).flatten(-2)


class Model(torch.nn.Module):
    def __init__(self, hp, n_vocab):
        super().__init__()
        self.hp, P = hp, torch.nn.Parameter
        e, q, kv = hp["n_embd"], hp["n_head"] * hp["head_dim"], \
            hp["n_head_kv"] * hp["head_dim"]
        ff, ne = hp["n_ff"], hp.get("n_expert", 0)

        def mat(n, k, gain=1.0):
            return P(torch.randn(n, k) * gain / math.sqrt(k))
        self.p = {}	# HF name -> parameter (names have dots)
        self.p["model.embed_tokens.weight"] = P(torch.randn(n_vocab, e) *
                                                0.02)
        self.p["model.norm.weight"] = P(torch.ones(e))
        out_gain = 1.0 / math.sqrt(2 * hp["n_layer"])
        for l in range(hp["n_layer"]):
            pre = "model.layers.%d." % l
            self.p[pre + "input_layernorm.weight"] = P(torch.ones(e))
            self.p[pre + "post_attention_layernorm.weight"] = P(torch.ones(e))
            self.p[pre + "self_attn.q_proj.weight"] = mat(q, e)
            self.p[pre + "self_attn.k_proj.weight"] = mat(kv, e)
            self.p[pre + "self_attn.v_proj.weight"] = mat(kv, e)
            self.p[pre + "self_attn.o_proj.weight"] = mat(e, q, out_gain)
            if hp["arch"] == "qwen3moe":
                self.p[pre + "self_attn.q_norm.weight"] = \
                    P(torch.ones(hp["head_dim"]))
                self.p[pre + "self_attn.k_norm.weight"] = \
                    P(torch.ones(hp["head_dim"]))
            if ne:
                self.p[pre + "mlp.gate.weight"] = mat(ne, e)
                for x in range(ne):
                    ex = pre + "mlp.experts.%d." % x
                    self.p[ex + "gate_proj.weight"] = mat(ff, e)
                    self.p[ex + "up_proj.weight"] = mat(ff, e)
                    self.p[ex + "down_proj.weight"] = mat(e, ff, out_gain)
            else:
                self.p[pre + "mlp.gate_proj.weight"] = mat(ff, e)
                self.p[pre + "mlp.up_proj.weight"] = mat(ff, e)
                self.p[pre + "mlp.down_proj.weight"] = mat(e, ff, out_gain)
        self.plist = torch.nn.ParameterList(self.p.values())

    def ffn(self, pre, x):
        p = self.p
        if not self.hp.get("n_expert"):
            return F.linear(F.silu(F.linear(x, p[pre + "mlp.gate_proj.weight"]))
                            * F.linear(x, p[pre + "mlp.up_proj.weight"]),
                            p[pre + "mlp.down_proj.weight"])
        # Softmax over all experts, top-k, renormalized (llama.cpp's
        # qwen3moe: norm_w).
        shape, x = x.shape, x.reshape(-1, x.shape[-1])
        w = F.softmax(F.linear(x, p[pre + "mlp.gate.weight"]), -1)
        tw, ti = w.topk(self.hp["n_expert_used"], -1)
        tw = tw / tw.sum(-1, keepdim=True)
        y = torch.zeros_like(x)
        for e in range(self.hp["n_expert"]):
            rows, slot = (ti == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            ex, xe = pre + "mlp.experts.%d." % e, x[rows]
            h = F.silu(F.linear(xe, p[ex + "gate_proj.weight"])) * \
                F.linear(xe, p[ex + "up_proj.weight"])
            y = y.index_add(0, rows, F.linear(h, p[ex + "down_proj.weight"])
                            * tw[rows, slot, None])
        return y.reshape(shape)

    def forward(self, tok):
        hp, p = self.hp, self.p
        B, T = tok.shape
        H, Hk, D = hp["n_head"], hp["n_head_kv"], hp["head_dim"]
        eps, neox = hp["rms_eps"], hp["arch"] != "llama"
        x = p["model.embed_tokens.weight"][tok]
        for l in range(hp["n_layer"]):
            pre = "model.layers.%d." % l
            h = rms(x, p[pre + "input_layernorm.weight"], eps)
            q = F.linear(h, p[pre + "self_attn.q_proj.weight"]).view(B, T, H, D)
            k = F.linear(h, p[pre + "self_attn.k_proj.weight"]).view(B, T, Hk, D)
            v = F.linear(h, p[pre + "self_attn.v_proj.weight"]).view(B, T, Hk, D)
            if neox:
                q = rms(q, p[pre + "self_attn.q_norm.weight"], eps)
                k = rms(k, p[pre + "self_attn.k_norm.weight"], eps)
            q, k = rope(q, hp["rope_base"], neox), rope(k, hp["rope_base"], neox)
            k = k.repeat_interleave(H // Hk, 2)
            v = v.repeat_interleave(H // Hk, 2)
            a = torch.softmax((q.transpose(1, 2) @ k.permute(0, 2, 3, 1)) /
                              math.sqrt(D) + self.mask[:T, :T], -1)
            o = (a @ v.transpose(1, 2)).transpose(1, 2).reshape(B, T, H * D)
            x = x + F.linear(o, p[pre + "self_attn.o_proj.weight"])
            x = x + self.ffn(pre, rms(x, p[pre + "post_attention_layernorm."
                                           "weight"], eps))
        x = rms(x, p["model.norm.weight"], eps)
        return F.linear(x, p["model.embed_tokens.weight"])	# tied


# ---- training ----

def batches(data, n, T, B, gen):
    for _ in range(n):
        i = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
        yield torch.stack([data[j:j + T + 1] for j in i])


def evaluate(model, val, T):
    n = min((len(val) - 1) // T, 32)	# 4k tokens: seconds, not minutes
    x = val[:n * T + 1]
    seqs = torch.stack([x[i * T:i * T + T + 1] for i in range(n)])
    with torch.no_grad():
        losses = [F.cross_entropy(model(s[:, :-1]).flatten(0, 1),
                                  s[:, 1:].flatten()).item()
                  for s in seqs.split(32)]
    return sum(losses) / len(losses)


def train(name, hp, n_vocab, data, val, a, curves):
    torch.manual_seed(a.seed)
    model = Model(hp, n_vocab)
    model.mask = torch.full((a.ctx, a.ctx), float("-inf")).triu(1)
    decay = [p for n, p in model.p.items() if p.dim() == 2]
    rest = [p for n, p in model.p.items() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(a.seed)
    warm = max(1, a.steps // 20)
    t0, tr, va = time.time(), [], []
    for step, xb in enumerate(batches(data, a.steps, a.ctx, a.batch, gen), 1):
        lr = a.lr * min(step / warm, 0.5 * (1 + math.cos(
            math.pi * min(1.0, (step - warm) / max(1, a.steps - warm)))))
        for g in opt.param_groups:
            g["lr"] = lr
        loss = F.cross_entropy(model(xb[:, :-1]).flatten(0, 1),
                               xb[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tr.append((step, loss.item()))
        if step % a.eval_every == 0 or step == a.steps:
            v = evaluate(model, val, a.ctx)
            va.append((step, v))
            log("%s: step %d/%d train %.3f val %.3f (ppl %.1f) lr %.2e "
                "%.0f s" % (name, step, a.steps, loss.item(), v, math.exp(v),
                            lr, time.time() - t0))
    curves[name] = (tr, va)
    return model


# ---- output ----

def write_safetensors(path, tensors, meta):
    """safetensors: F16 for matrices, F32 for the 1-D tensors."""
    header, blobs, off = {"__metadata__": meta}, [], 0
    for name, t in tensors.items():
        arr = t.detach().numpy().astype(np.float16 if t.dim() == 2
                                        else np.float32)
        b = arr.tobytes()
        header[name] = {"dtype": "F16" if t.dim() == 2 else "F32",
                        "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def write_model(out, name, hp, model, tokens, merges, a, val_loss):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    cfg = dict(hp, n_vocab=len(tokens), n_ctx_train=a.ctx, tied=True,
               seed=a.seed, steps=a.steps, val_loss=round(val_loss, 4))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")
    tok = dict(model="gpt2", pre=PRE, tokens=tokens,
               merges=[a + " " + b for a, b in merges],
               bos=SPECIALS[0], eos=SPECIALS[2], chat_template=CHAT_TEMPLATE)
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    write_safetensors(os.path.join(d, "model.safetensors"),
                      dict(model.p.items()), {"format": "pt"})


def plot(path, name, tr, va):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*zip(*tr), alpha=0.5, label="train")
    ax.plot(*zip(*va), marker="o", label="validation (4 k held-out tokens)")
    ax.set_title(name)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--corpus", help="the KJV as `bible gen1:1-rev22:21` "
                    "prints it (default: run that)")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--heldout-tokens", type=int, default=4096,
                    help="held-out tokens shipped for perplexity")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--shrink", action="store_true",
                    help="1 layer, 64 wide, 512 tokens (a smoke test)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    t0 = time.time()
    chapters = read_corpus(a.corpus)
    # Every 40th chapter is held out (validation and perplexity).
    held = [c for i, c in enumerate(chapters) if i % 40 == 20]
    kept = [c for i, c in enumerate(chapters) if i % 40 != 20]
    if a.shrink:
        kept, a.vocab = kept[:40], 512
    tokens, merges = train_bpe(kept, a.vocab)
    tk = Tokenizer(tokens, merges)
    eot = tk.ids[SPECIALS[0]]
    data = torch.tensor([i for c in kept for i in tk.encode(c) + [eot]])
    val_ids = [i for c in held for i in tk.encode(c) + [eot]]
    val = torch.tensor(val_ids[:32 * a.ctx + 1] if a.shrink else val_ids)
    log("corpus: %d chapters, %d train / %d held-out tokens, vocab %d "
        "(%d merges), %.0f s" % (len(chapters), len(data), len(val_ids),
                                 len(tokens), len(merges), time.time() - t0))
    os.makedirs(a.out, exist_ok=True)
    # The held-out text and its ids, cut at a chapter's end.
    text, ids = "", []
    for c in held:
        t = tk.encode(c) + [eot]
        if len(ids) + len(t) > a.heldout_tokens and ids:
            break
        text, ids = text + c + SPECIALS[0], ids + t
    with open(os.path.join(a.out, "heldout.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "heldout.ids"), "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")

    curves = {}	# name: (train, validation) as (step, loss) lists
    for name in a.models.split(","):
        hp = dict(MODELS[name])
        if a.shrink:
            hp.update(n_layer=1, n_embd=64, n_ff=64, n_head=2, n_head_kv=1)
        model = train(name, hp, len(tokens), data, val, a, curves)
        write_model(a.out, name, hp, model, tokens, merges, a,
                    curves[name][1][-1][1])
        plot(os.path.join(a.out, name, "loss.png"), name, *curves[name])
    log("done: %s, %.0f s" % (a.out, time.time() - t0))


if __name__ == "__main__":
    main()
