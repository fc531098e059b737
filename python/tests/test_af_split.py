# SPDX-License-Identifier: MIT
"""python/examples/af_split.py: attention in PyTorch, FFN/MoE in syshaxd,
the same logits (within its tolerance) and greedy tokens as PyTorch."""
import importlib.util
import os
import sys

import pytest

import syshax

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "af_split", os.path.join(HERE, "..", "examples", "af_split.py"))
af_split = importlib.util.module_from_spec(spec)
sys.modules["af_split"] = af_split  # for its dataclasses
spec.loader.exec_module(af_split)


@pytest.mark.parametrize("variant,op", [([], "ffn"), (["--moe"], "moe")])
def test_af_split(sh, variant, op):
    before = sh.engine_stats()["ops"][op]["jobs"]
    res = af_split.main(["--preset", "tiny", "--steps", "32", "--json"] +
                        variant)
    assert res["same_tokens"], res
    assert res["max_diff"] <= af_split.TOLERANCE, res
    assert len(res["tokens"]) == 32
    # Every layer's FFN block of every step (8 prompt tokens, 32 steps)
    # ran in the engine, and the split run waited for it.
    after = sh.engine_stats()["ops"][op]["jobs"]
    assert after - before == res["layers"] * (8 + 32)
    assert res["wait_s"] > 0 and res["engine_s"] > 0
    assert res["ok"]
