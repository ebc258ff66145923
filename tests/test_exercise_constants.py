"""No exercise can be passed by a constant.

Every exercise has at least two cases whose expected outputs differ, and a
function that returns what the reference returned on the first case, whatever
its arguments, fails some case: a learner who writes in the answer to the
example shown (or a count that happens to fit every case) is told so.

An exercise whose function takes no argument (``sharding.spec_for_target``:
write down the spec of a drawn layout) asks for a constant: only its cases
must differ.

The exercises on one device are checked in this process; those on more in
one fresh process per device count (slow). Cases that launch processes are
left out (they are given the reference's own output): every exercise that
has one also has cases in this process that tell a constant apart.
"""

from __future__ import annotations

import inspect

import pytest
from exercise_answers import constant_verdicts
from processes import per_device_count

from jaxcourse.exercises import exercise_ids, get

IDS = exercise_ids()


@pytest.fixture(scope="module")
def verdicts_elsewhere():
    """Verdicts from one fresh process per device count, each computed once."""
    return per_device_count("constant_verdicts")


@pytest.mark.parametrize("exercise_id", [
    pytest.param(e, marks=[pytest.mark.slow] * (get(e).devices > 1)) for e in IDS])
def test_no_constant_passes(request: pytest.FixtureRequest, exercise_id: str) -> None:
    devices = get(exercise_id).devices
    verdict = constant_verdicts([exercise_id])[exercise_id] if devices == 1 else \
        request.getfixturevalue("verdicts_elsewhere")(devices)[exercise_id]
    assert verdict["distinct"], f"{exercise_id}: every case expects the same output"
    if not inspect.signature(get(exercise_id).reference).parameters:
        return  # the answer is a constant by design
    assert verdict["constants"], f"{exercise_id}: the reference returned nothing"
    passing = [n for n, told in enumerate(verdict["constants"]) if not told]
    assert not passing, (f"{exercise_id}: a function returning the first case's "
                         f"output (call {passing}) passes every case")
