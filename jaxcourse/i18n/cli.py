"""The command line of :mod:`jaxcourse.i18n` (``python -m jaxcourse.i18n``).

Without a flag it merges the English into the catalogs and writes the editions
(:func:`.editions.write`); ``--check`` only says which of them are out of date,
``--coverage`` prints :func:`.reports.coverage`'s table and ``--lint [CATALOG
...]`` :func:`.reports.lint`'s findings (without a catalog, also the editions'
regional usage, rows and columns, how they name the editions, the Simplified
style sheet's findings (:mod:`.usage`) and the stale reviewed overrides),
exiting 1 if there are any.
"""

from __future__ import annotations

import argparse

from jaxcourse.cli import add_version

from ..zh_hans import report_stale
from .editions import out_of_date, write
from .reports import coverage, coverage_text, lint, stale_overrides
from .usage import axis_findings, naming_findings, style_findings, usage_findings

#: What ``--help`` says the command is for.
DESCRIPTION = ("Chinese editions of the English chapters and their exercises, "
               "from gettext catalogs.")


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module's docstring."""
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.i18n",
                                     description=DESCRIPTION)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true",
                       help="exit 1 if a catalog or an edition is out of date")
    group.add_argument("--coverage", action="store_true",
                       help="print translated, stale and missing entries per catalog")
    group.add_argument("--lint", nargs="*", metavar="CATALOG",
                       help="check that translations keep code, math, links, headings "
                            "(and, without CATALOG, regional usage and style)")
    add_version(parser)
    args = parser.parse_args(argv)
    if args.check:
        return report_stale(out_of_date(), "python -m jaxcourse.i18n")
    if args.coverage:
        print(coverage_text(coverage()))
        return 0
    if args.lint is not None:
        problems = lint(names=args.lint or None)
        print("\n".join(problems) or "every translation keeps its code, math and links")
        if not args.lint:  # the editions as a whole: regional usage, style sheet
            usage = [line for lines in usage_findings().values() for line in lines]
            axes = [line for lines in axis_findings().values() for line in lines]
            names = [line for lines in naming_findings().values() for line in lines]
            style = style_findings()
            stale = stale_overrides()
            print("\n".join(usage) or "zh-Hant writes as Taiwan does, zh-Hans as the "
                  "mainland does")
            print("\n".join(axes) or "rows and columns agree with the English")
            print("\n".join(names) or "each edition names itself and chapter 9 in "
                  "its own script")
            print("\n".join(style) or "zh-Hans follows its style sheet")
            print("\n".join(stale) or "no reviewed zh-Hant override is stale")
            problems += usage + axes + names + style + stale
        return 1 if problems else 0
    for name in write():
        print(f"wrote {name}")
    return 0
