"""The transformer library's cases, in a pytest process of their own
(``tests/own_process.py`` says why): ``tests/transformer_cases.py`` needs a
mesh of eight CPU devices."""

from __future__ import annotations

from own_process import ROOT, run_cases


def test_the_transformer_library_and_its_corpus() -> None:
    run_cases(ROOT / "tests" / "transformer_cases.py")
