"""Tensor parallelism's split vocabulary, in a pytest process of its own
(``tests/own_process.py`` says why): ``tests/vocab_parallel_cases.py`` needs a
mesh of eight CPU devices."""

from __future__ import annotations

from own_process import ROOT, run_cases


def test_the_vocabulary_parallel_embedding_and_loss() -> None:
    run_cases(ROOT / "tests" / "vocab_parallel_cases.py")
