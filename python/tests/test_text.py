# SPDX-License-Identifier: MIT
"""syshax.text: libshxtext through Python on the shipped trained model
(build/models/kjv-llama-f32.gguf, $SYSHAX_TEST_BUILD): the held-out text
tokenized as the trainer did, round trips, ChatML, the sampler."""
import math
import os

import numpy as np
import pytest

from syshax import text

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def tok():
    b = os.environ.get("SYSHAX_TEST_BUILD")
    if not b:
        pytest.fail("SYSHAX_TEST_BUILD is not set: run python/tests/run.sh")
    return text.Tokenizer(os.path.join(b, "models", "kjv-llama-f32.gguf"))


def test_heldout_ids_as_the_trainer(tok):
    # The trainer (tools/train/train.py, Python) wrote heldout.ids from
    # heldout.txt with its own BPE; ours, llama.cpp's equal, must agree.
    with open(os.path.join(TOP, "models", "heldout.txt"), encoding="utf-8") as f:
        txt = f.read()
    with open(os.path.join(TOP, "models", "heldout.ids")) as f:
        want = [int(x) for x in f.read().split()]
    got = tok.encode(txt, add_special=True, parse_special=True)
    assert len(want) > 3000
    assert got == want
    # Control tokens not parsed: <|endoftext|> is text (10 ids each).
    plain = tok.encode(txt, parse_special=False)
    assert len(plain) == len(want) + 9 * txt.count("<|endoftext|>")
    assert tok.decode(got, special=True) == txt
    assert tok.decode(plain) == txt


def test_vocabulary(tok):
    assert tok.n_vocab == 2048
    assert tok.eos == tok.find("<|im_end|>") and tok.eos >= 0
    assert tok.is_eog(tok.eos) and not tok.is_eog(tok.encode("And")[0])
    assert tok.piece(tok.eos) == b"" and tok.piece(tok.eos, True) == b"<|im_end|>"
    assert text.chat_name(tok.chat_template) == "chatml"


def test_utf8_round_trip(tok):
    s = "In the beginning \u00e9t\u00e9 \u4e2d\u6587 \U0001f600 \t\n  x"
    assert tok.decode(tok.encode(s)) == s
    with pytest.raises(ValueError):
        tok.decode([tok.n_vocab])
    with pytest.raises(ValueError):
        tok.decode([-1])


def test_chat_prompt(tok):
    msgs = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Who begat Isaac?"}]
    want = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
            "Who begat Isaac?<|im_end|>\n<|im_start|>assistant\n")
    assert text.chat_prompt(tok, msgs) == want
    assert text.chat_apply("chatml", msgs, False) == want[:-len(
        "<|im_start|>assistant\n")]
    assert text.chat_prompt(tok, msgs, template="llama3").startswith(
        "<|start_header_id|>system<|end_header_id|>")
    with pytest.raises(ValueError):
        text.chat_apply("{{ no family }}", msgs)
    with pytest.raises(TypeError):
        text.chat_apply("chatml", [{"role": "user"}])


def test_errors():
    with pytest.raises(FileNotFoundError):
        text.Tokenizer("/nonexistent/model.gguf")
    with pytest.raises(ValueError):
        text.Tokenizer(os.path.join(TOP, "models", "heldout.txt"))
    with pytest.raises(ValueError):
        text.Sampler(8, temperature=-1.0)
    with pytest.raises(ValueError):
        text.Sampler(8).sample(np.zeros(7, dtype=np.float32))


def test_sampler():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal(2048).astype(np.float32)
    greedy = text.Sampler(2048, temperature=0.0)
    assert greedy.sample(logits) == int(np.argmax(logits))
    runs = []
    for _ in range(2):
        s = text.Sampler(2048, temperature=0.8, top_p=0.9, seed=42)
        runs.append([s.sample(logits) for _ in range(32)])
    assert runs[0] == runs[1] and len(set(runs[0])) > 1
    s = text.Sampler(2048, temperature=0.0, top_logprobs=5)
    tid, lp, top = s.sample(logits)
    ls = logits.astype(np.float64)
    want = ls - (ls.max() + math.log(np.exp(ls - ls.max()).sum()))
    assert tid == int(np.argmax(logits)) and top[0][0] == tid
    assert abs(lp - want[tid]) < 1e-4 and len(top) == 5
    assert [i for i, _ in top] == [int(i) for i in np.argsort(-logits)[:5]]
    assert sum(math.exp(v) for _, v in top) <= 1.0
    # The raw row's logprobs, as syshax-serve returns them: a penalty
    # that moves the draw away from the argmax leaves them as they were.
    s = text.Sampler(2048, temperature=0.0, repeat_penalty=1e6,
                     top_logprobs=2)
    s.accept(int(np.argmax(logits)))
    tid, lp, top = s.sample(logits)
    assert tid == int(np.argsort(-logits)[1])
    assert abs(lp - want[tid]) < 1e-4
    assert top[0][0] == int(np.argmax(logits))
    with pytest.raises(ValueError):
        text.Sampler(8, top_logprobs=21)
