"""How often a Check names the mistake in a wrong answer written blind.

Usage: ``python benchmarks/named_mistakes.py [--set tuning|held_out] [--only PREFIX ...]
[--json FILE]``

The wrong answers in ``benchmarks/blind_answers/`` (the **tuning** set) were
written from the exercise text alone, by authors who had read neither the
references nor the course's own tables of wrong answers
(``tests/exercise_answers``): they are the mistakes a learner makes, not the
ones the checker was built for. The checks' diagnoses were then tuned on
them, so their named fraction no longer says how the checks do on answers no
one has seen. ``benchmarks/held_out/`` (the **held-out** set) was written
the same way by other writers (one per group of chapters, each module says
what it read), after the tuning: no diagnosis is written from it, and its
fraction is the one that measures generalization (issue #65: at least 85 %
named overall, no exercise under 60 %, no right answer rejected). Every
answer is checked as a learner's would be (``check(id, function)``), in one
fresh process per device count (JAX fixes its devices when it starts); the
answers to ``dp_zh.*`` are checked against the Simplified edition
(``dp_zh_hans.*``) too.

Each verdict is one of:

- **named**: some failed test says what is wrong: a known mistake, a shape,
  a dtype, a structure, a time-out, a missing technique, a measurement of
  the compiled program or of a layout in words (``judging._measured``), the
  course's advice on an error, or how the wrong values relate to the
  expected ones (a factor, a sign, an offset, a shift: ``judging._pattern``);
- **raised**: no failed test names it, but one reports an error the function
  raised, in the error's own words only (no known mistake, no advice of the
  course's): it locates the problem without naming it, and counts against
  the strict fraction (the target's), for the looser one beside it;
- **unnamed**: every failed test gives only a difference of values
  ("wrong values: expected …, got …"), or a launched process's raw output;
- **accepted**: the Check passed it. Either the answer is right after all or
  the cases miss the mistake: each is listed, to be looked at, and left out
  of the fraction.

A module may also hold ``RIGHT``: answers that are right though written
unlike the references. Each is **right** when its Check passes and
**rejected** (a false verdict, listed) when it does not.

Printed: a table per exercise (answers, named, unnamed, accepted, the named
fraction), the answers not named (so the next diagnosis can be chosen), the
accepted ones, and the overall fraction, against the set's targets
(:data:`TARGETS`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Each set of answers, by name: the one the diagnoses were tuned on, and the
#: one written later by other writers, which no diagnosis was written from.
SETS = {"tuning": HERE / "blind_answers", "held_out": HERE / "held_out"}
#: Per set: the named fraction wanted overall, and for every exercise.
TARGETS = {"tuning": (60, 40), "held_out": (85, 60)}
MARK = "NAMED-JSON:"


def load_answers(table: str = "ANSWERS", answers: str = "tuning"
                 ) -> list[tuple[str, str, object, str]]:
    """Return ``(exercise id, module name, function, what)`` for every blind answer.

    ``table`` is ``"ANSWERS"`` (the wrong ones) or ``"RIGHT"`` (right ones
    written unlike the references, which a module may add: each must pass),
    from the set ``answers`` (a key of :data:`SETS`).
    """
    found = []
    for path in sorted(SETS[answers].glob("*.py")):
        if path.name.startswith("_"):
            continue
        name = f"{answers}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # inspect.getsource finds launched answers
        spec.loader.exec_module(module)
        for exercise_id, function, what in getattr(module, table, []):
            found.append((exercise_id, path.stem, function, what))
    return found


def _template(text: str, capture: str = "") -> re.Pattern:
    # A catalogue text as a pattern: its fields match anything; ``capture``
    # names the one field to keep.
    parts = []
    for piece in re.split(r"(\{[^{}]*\})", text):
        if piece.startswith("{") and piece.endswith("}"):
            name = piece[1:-1].split(":")[0]
            parts.append(f"(?P<{name}>.*)" if name == capture else ".*?")
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts) + r"\Z", re.S)


def value_only(problem: str, language: str) -> bool:
    """Whether ``problem`` only reports a difference of values (names nothing)."""
    from jaxcourse.messages import MESSAGES

    texts = {**MESSAGES["en"], **MESSAGES[language]}
    if " — " in problem:  # a known mistake's message follows the difference
        return False
    # A choice said by its name ("expected 'no remat', got 'full remat'") is
    # a difference of values too: it names what differs, not why.
    diffs = [_template(texts[k]) for k in ("wrong_values", "wrong_values_large",
                                          "wrong_values_one", "wrong_choice")]
    candidates = [problem]
    inside = _template(texts["at_path"], capture="problem").match(problem)
    if inside:
        candidates.append(inside["problem"])
    if any(d.match(c) for d in diffs for c in candidates):
        return True
    # A launched process's last line of output, when it says nothing in words.
    raw = re.match(r"process \d+ failed: (.*)\Z", problem, re.S)
    return bool(raw) and not re.search(r"[A-Za-z]{3,}", raw[1])


def raw_error(problem: str, language: str) -> bool:
    """Whether ``problem`` only passes on an error's own text, with nothing added.

    An exception's message may say what is wrong (JAX's often does), but in
    its own words and terms, not the exercise's: the strict count does not
    take it as named. The course's advice after it (a concrete value needed
    under jit, an escaped tracer) or a known mistake's message does count.
    """
    from jaxcourse.messages import MESSAGES

    texts = {**MESSAGES["en"], **MESSAGES[language]}
    if " — " in problem or any(
            texts[k] in problem
            for k in ("jit_advice", "tracer_leak", "global_shape_advice")):
        return False
    raised = [_template(texts[k]) for k in ("raised", "raised_under")]
    return any(r.match(problem) for r in raised)


def verdict(result: object) -> str:
    """Return "accepted", "named", "raised" or "unnamed" for a Check's result.

    "raised": no failed test names the mistake, but one reports an error the
    function raised, in the error's own words (:func:`raw_error`).
    """
    if result.passed:
        return "accepted"
    failed = [f for f in result.feedback if not f.passed]
    if all(value_only(f.problem, result.language) for f in failed):
        return "unnamed"
    if all(value_only(f.problem, result.language)
           or raw_error(f.problem, result.language) for f in failed):
        return "raised"
    return "named"


def child(devices: int, only: list[str], answers: str = "tuning") -> None:
    """Check every answer whose exercise has ``devices`` devices; print the JSON."""
    from jaxcourse.devices import use_cpu_devices

    use_cpu_devices(devices)
    from jaxcourse.exercises import check, exercise_ids, get

    known = set(exercise_ids())
    rows = []
    rows_in = [(*row, False) for row in load_answers("ANSWERS", answers)] + [
        (*row, True) for row in load_answers("RIGHT", answers)]
    for exercise_id, module, function, what, right in rows_in:
        targets = [exercise_id]
        twin = exercise_id.replace("dp_zh.", "dp_zh_hans.", 1)
        if twin != exercise_id and twin in known:
            targets.append(twin)
        for target in targets:
            if target not in known or get(target).devices != devices:
                continue
            if only and not any(target.startswith(p) for p in only):
                continue
            result = check(target, function)
            failed = [f.message for f in result.feedback if not f.passed]
            said = verdict(result)
            if right:  # a right answer: passed, or rejected (a false verdict)
                said = "right" if result.passed else "rejected"
            rows.append({"id": target, "answer": function.__name__, "what": what,
                         "module": module, "verdict": said,
                         "failed": failed[:2]})
    print(MARK + json.dumps(rows, ensure_ascii=False), flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run one child per device count, then print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[],
                        help="exercise id prefixes, e.g. mlp. shard_map.global")
    parser.add_argument("--json", type=Path, help="also write every verdict here")
    parser.add_argument("--set", choices=sorted(SETS), default="tuning",
                        help="which answers: the tuning set, or the held-out one")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.only, args.set)
        return 0

    from jaxcourse.exercises import exercise_ids, get

    counts = sorted({get(e).devices for e in exercise_ids()})
    rows: list[dict] = []
    for devices in counts:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(devices), "--set", args.set,
             "--only", *args.only],
            capture_output=True, text=True, timeout=3600)
        line = next((x for x in proc.stdout.splitlines() if x.startswith(MARK)), None)
        if proc.returncode != 0 or line is None:
            print(f"the {devices}-device child failed:\n{proc.stderr[-3000:]}")
            return 1
        rows += json.loads(line[len(MARK):])
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")

    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        table[row["id"]][row["verdict"]] += 1
    print(f"{'exercise':36} {'answers':>7} {'named':>6} {'raised':>7} {'unnamed':>8} "
          f"{'accepted':>9} {'named %':>8} {'+raised %':>10} {'right':>6} "
          f"{'rejected':>9}")
    low = []
    for exercise_id in sorted(table):
        t = table[exercise_id]
        judged = t["named"] + t["raised"] + t["unnamed"]
        share = 100 * t["named"] / judged if judged else float("nan")
        loose = 100 * (t["named"] + t["raised"]) / judged if judged else float("nan")
        overall_target, each_target = TARGETS[args.set]
        if judged and share < each_target:
            low.append(exercise_id)
        print(f"{exercise_id:36} {judged + t['accepted']:7d} {t['named']:6d} "
              f"{t['raised']:7d} {t['unnamed']:8d} {t['accepted']:9d} {share:7.0f}% "
              f"{loose:9.0f}% {t['right'] + t['rejected']:6d} {t['rejected']:9d}")
    named = sum(t["named"] for t in table.values())
    raised = sum(t["raised"] for t in table.values())
    judged = sum(t["named"] + t["raised"] + t["unnamed"] for t in table.values())
    print("\nnot named:")
    for row in rows:
        if row["verdict"] in ("unnamed", "raised"):
            print(f"  {row['id']} {row['answer']}: {row['failed'][0][:150]}")
    print("\naccepted (right after all, or a mistake the cases miss):")
    for row in rows:
        if row["verdict"] == "accepted":
            print(f"  {row['id']} {row['answer']}: {row['what']}")
    print("\nrejected (right answers the check refused: false verdicts):")
    for row in rows:
        if row["verdict"] == "rejected":
            print(f"  {row['id']} {row['answer']}: {row['failed'][0][:150]}")
    overall = 100 * named / judged if judged else float("nan")
    loose = 100 * (named + raised) / judged if judged else float("nan")
    overall_target, each_target = TARGETS[args.set]
    print(f"\n{args.set} set: named {named} of {judged} wrong answers "
          f"({overall:.0f} %; target {overall_target} %); exercises under "
          f"{each_target} %: {', '.join(low) or 'none'}")
    print(f"named or reported as the error raised: {named + raised} of {judged} "
          f"({loose:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
