"""Characters as tokens, and a small model trained on the course's corpus.

:class:`CharTokenizer` maps each character of a text to an integer (the
vocabulary is the text's own characters, sorted); :func:`batches` cuts
random windows out of the encoded text; :func:`train` runs the training
step of :mod:`.training` on them and returns the losses.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import jax
import numpy as np

from .config import Config
from .training import init_state, make_step

__all__ = ["CharTokenizer", "batches", "train"]


@dataclass(frozen=True)
class CharTokenizer:
    """A character-level tokenizer: one token per distinct character.

    Attributes
    ----------
    alphabet : str
        The characters, in token order.
    """

    alphabet: str

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """Return the tokenizer whose vocabulary is ``text``'s characters, sorted."""
        return cls("".join(sorted(set(text))))

    @property
    def vocab(self) -> int:
        """The number of tokens."""
        return len(self.alphabet)

    def encode(self, text: str) -> np.ndarray:
        """Return the tokens of ``text`` (``int32``).

        Raises
        ------
        ValueError
            If ``text`` holds a character outside the vocabulary.
        """
        index = {c: i for i, c in enumerate(self.alphabet)}
        unknown = sorted(set(text) - index.keys())
        if unknown:
            raise ValueError(f"characters outside the vocabulary: {unknown[:10]}")
        return np.fromiter((index[c] for c in text), np.int32, len(text))

    def decode(self, tokens: np.ndarray) -> str:
        """Return the text of ``tokens``."""
        return "".join(self.alphabet[int(t)] for t in np.asarray(tokens).ravel())


def batches(tokens: np.ndarray, batch: int, seq: int, seed: int = 0
            ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(inputs, targets)`` forever: random windows, targets one ahead."""
    if len(tokens) <= seq + 1:
        raise ValueError(f"a text of {len(tokens)} tokens has no window of {seq + 1}")
    rng = np.random.default_rng(seed)
    while True:
        starts = rng.integers(0, len(tokens) - seq - 1, size=batch)
        windows = np.stack([tokens[s:s + seq + 1] for s in starts])
        yield windows[:, :-1], windows[:, 1:]


def train(text: str, cfg: Config, steps: int = 300, batch: int = 16, seq: int = 64,
          learning_rate: float = 3e-3, seed: int = 0, precision: str = "float32"
          ) -> dict[str, object]:
    """Train a character-level model on ``text`` and return its losses.

    Parameters
    ----------
    text : str
        The corpus.
    cfg : Config
        The model; its ``vocab`` must hold the text's characters.
    steps, batch, seq : int
        Training steps, windows per batch and characters per window.
    learning_rate : float
        Adam's step size.
    seed : int
        Seeds the initial weights and the windows drawn.
    precision : str
        A scheme of :data:`jaxcourse.transformer.PRECISIONS`.

    Returns
    -------
    dict
        ``losses`` (one per step, float), ``seconds`` (the whole loop, the
        first step's compilation included), ``tokenizer`` and ``state``.
    """
    tokenizer = CharTokenizer.from_text(text)
    if tokenizer.vocab > cfg.vocab:
        raise ValueError(f"the text has {tokenizer.vocab} characters; the config's "
                         f"vocab is {cfg.vocab}")
    # One compiled program draws every weight (op by op, each shape would
    # compile its own).
    state = jax.jit(lambda key: init_state(key, cfg, precision, learning_rate))(
        jax.random.key(seed))
    step = jax.jit(make_step(cfg, precision, learning_rate=learning_rate),
                   donate_argnums=0)
    stream = batches(tokenizer.encode(text), batch, seq, seed)
    losses = []
    started = time.perf_counter()
    for _ in range(steps):
        inputs, targets = next(stream)
        state, value = step(state, inputs, targets)
        losses.append(value)
    losses = [float(v) for v in jax.device_get(losses)]
    return {"losses": losses, "seconds": time.perf_counter() - started,
            "tokenizer": tokenizer, "state": state}
