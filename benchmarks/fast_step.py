"""The fast step's MFU on a TPU v5e, and its ratio to MaxText's published v5e figures.

Run: ``python benchmarks/fast_step.py`` reads the ladder measured on a chip
(``jaxcourse/data/measured/fast_step/tpu_v5e.json``, chapter 10) and prints,
for each rung, its step time, its MFU as MaxText counts it (causal attention
halved) and that MFU as a ratio to each of MaxText's published results on
TPU v5e (``configs/v5e/README.md``: 16B to 128B on a v5e-256). On a TPU,
``--live FILE`` measures the ladder again first (``python -m
jaxcourse.measure --ladder FILE``, about ten minutes) and reports that.

Every ratio is computed in one run from one file: the step's MFU over a
published MFU, both counted the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaxcourse import fast_step, measure


def main(argv: list[str] | None = None) -> int:
    """Print each rung's MFU and its ratio to MaxText's v5e results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", type=Path,
                        help="on a TPU: measure the ladder into this file first")
    args = parser.parse_args(argv)
    if args.live:
        ladder = measure.measure_ladder(args.live)
    else:
        ladder = fast_step.load_ladder()
    chip = measure.hardware_of(ladder["device_kind"])
    if chip is None:
        print(f"no peak FLOP/s known for {ladder['device_kind']!r}")
        return 2
    versions = ladder["versions"]
    print(f"{ladder['device_kind']}, measured {ladder['date']} (JAX {versions['jax']}, "
          f"libtpu {versions['libtpu']}); MFU as MaxText counts it")
    sizes = list(fast_step.MAXTEXT_V5E)
    print(f"{'rung':10}{'ms':>8}{'MFU':>7}  " + "".join(f"{'/' + s:>7}" for s in sizes))
    for key, _, _ in fast_step.LADDER:
        row = ladder["runs"][key]
        if "refused" in row:
            print(f"{key:10}  refused")
            continue
        recipe = fast_step.Recipe.from_dict(row["recipe"])
        mfu = fast_step.mfu(recipe, row["step_seconds"], chip.flops)
        ratios = "".join(f"{mfu / fast_step.MAXTEXT_V5E[s]:>7.2f}" for s in sizes)
        print(f"{key:10}{row['step_seconds'] * 1e3:8.1f}{mfu:7.1%}  {ratios}")
    print("MaxText on a v5e-256: " + ", ".join(
        f"{s} {v:.1%}" for s, v in fast_step.MAXTEXT_V5E.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
