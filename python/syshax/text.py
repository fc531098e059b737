# SPDX-License-Identifier: MIT
"""syshax.text: the tokenizer, chat templates and sampler of syshax-run
and syshax-serve (libshxtext, text/ in the tree), for Python.

* :class:`Tokenizer` ``(path)``: a GGUF's ``tokenizer.ggml.*`` vocabulary
  (SPM or BPE with its pre-tokenizer), ids equal to llama.cpp's
  ``llama_tokenize``: ``encode(text, add_special=True,
  parse_special=False)``, ``decode(ids, special=False)``, ``piece(id)``,
  ``is_eog(id)``, ``find(text)``; ``n_vocab``, ``bos``, ``eos``, ``eot``,
  ``chat_template``.
* :func:`chat_prompt` ``(tok, messages)``: the conversation as the prompt
  text the model was trained on, as ``llama_chat_apply_template`` renders
  it; :func:`chat_apply` ``(template, messages)`` with a template's text
  or a family name ("chatml", "llama3", ...).
* :class:`Sampler` ``(n_vocab, *, temperature=1, top_k=0, top_p=1,
  min_p=0, repeat_penalty=1, frequency_penalty=0, presence_penalty=0,
  penalty_last_n=64, seed=0, top_logprobs=0)``: ``sample(logits)`` on a
  float32 row, the id (or ``(id, logprob, top)`` with top_logprobs).

Errors: ``FileNotFoundError``/``ValueError`` for a file that is not a
GGUF with a vocabulary, ``ValueError`` for a bad id, parameter or a
template this library does not apply (never a silent guess).
"""
from typing import Mapping, Optional, Sequence

from ._text import Sampler, Tokenizer, chat_apply, chat_name

__all__ = ["Sampler", "Tokenizer", "chat_apply", "chat_name",
           "chat_prompt"]


def chat_prompt(tok: Tokenizer, messages: Sequence[Mapping[str, str]],
                add_generation_prompt: bool = True,
                template: Optional[str] = None) -> str:
    """messages as the model's prompt text: its tokenizer.chat_template,
    or template (a family name or a template's text) instead."""
    t = template if template is not None else tok.chat_template
    if t is None:
        raise ValueError("the model has no tokenizer.chat_template: name "
                         "one (template='chatml', 'llama3', ...)")
    return chat_apply(t, messages, add_generation_prompt)
