"""Chapter 3's reference matches the chapter; the ELBO explorer works headlessly.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook) is checked for every
chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/bayes.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from solutions import bayes


def test_reference_matches_the_chapter() -> None:
    betas, all_x, y = bayes._chapter_betas(np.random.default_rng(0))
    # The seed's printed values for its batch of ten betas.
    expected = [-147.84033, -207.02205, -109.26075, -243.80833, -163.0291,
                -143.84848, -160.28773, -113.771706, -126.60544, -190.81992]
    # Two float32 evaluations of the chapter's log joints (10 features, 100
    # points), as the exercises' first cases compare them.
    tolerance = bayes.log_joint_tolerance(10, 100)
    np.testing.assert_allclose(bayes.batched_log_joint(betas, all_x, y), expected,
                               **tolerance)
    np.testing.assert_allclose(bayes.vmapped_log_joint(betas, all_x, y), expected,
                               **tolerance)


def _log_joint_terms(betas, all_x, y, prior_scale=1.0) -> float:
    """The largest ratio of a log joint's terms, |x| @ |beta| included, to it."""
    betas, x = np.asarray(betas, np.float64), np.asarray(all_x, np.float64)
    logits = (2 * np.asarray(y) - 1) * (betas @ x.T)
    size = np.logaddexp(0, -logits).sum(1) + (
        0.5 * (betas / prior_scale) ** 2 + np.log(prior_scale * np.sqrt(2 * np.pi))
    ).sum(1)  # every term is negative: the sum of their sizes
    return float(np.max((size + np.abs(betas) @ np.abs(x).sum(0)) / size))


def _elbo_terms(loc, log_scale, epsilon, all_x, y) -> float:
    """The ratio of an ELBO's terms, |x| @ |beta| included, to its size."""
    loc, log_scale, epsilon = (np.asarray(a, np.float64)
                               for a in (loc, log_scale, epsilon))
    betas = loc + np.exp(log_scale) * epsilon
    log_joints = np.array([float(bayes.log_joint(b, all_x, y, bayes.VI_PRIOR_SCALE))
                           for b in betas])
    entropy = log_scale + 0.5 * np.log(2 * np.pi * np.e)
    inner = np.abs(betas) @ np.abs(np.asarray(all_x, np.float64)).sum(0)
    terms = np.abs(log_joints).mean() + inner.mean() + np.abs(entropy).sum()
    return float(terms / abs(log_joints.mean() + entropy.sum()))


def _elbo_gradient_terms(loc, log_scale, epsilon, all_x, y) -> float:
    """The largest term of the ELBO's gradients: each point's |x| times its sigmoid."""
    loc, log_scale, epsilon, x = (np.asarray(a, np.float64)
                                  for a in (loc, log_scale, epsilon, all_x))
    sigma = np.exp(log_scale)
    betas = loc + sigma * epsilon
    weights = 1 / (1 + np.exp((2 * np.asarray(y) - 1) * (betas @ x.T)))
    terms = weights @ np.abs(x) + np.abs(betas) / bayes.VI_PRIOR_SCALE ** 2
    return float(max(terms.mean(0).max(),
                     (terms * sigma * np.abs(epsilon)).mean(0).max() + 1))


def test_the_bounds_the_tolerances_assume_hold() -> None:
    from jaxcourse.exercises import get

    for exercise_id in ("bayes.batched_log_joint", "bayes.vmapped_log_joint"):
        for case in get(exercise_id).cases:
            betas, all_x, y = case.make_inputs()[:3]
            assert _log_joint_terms(betas, all_x, y, **case.kwargs) \
                <= bayes.LOG_JOINT_TERMS
    for exercise_id in ("bayes.elbo_value_and_grad", "bayes.ascent_step"):
        for case in get(exercise_id).cases:
            inputs = case.make_inputs()[:5]
            assert _elbo_terms(*inputs) <= bayes.LOG_JOINT_TERMS
            assert _elbo_gradient_terms(*inputs) <= bayes.ELBO_GRADIENT_TERMS


# ---- the ELBO explorer ----------------------------------------------------------

PNG = b"\x89PNG"


def test_fit_elbo_climbs() -> None:
    from jaxcourse.exercises.widgets.explorers_bayes import fit_elbo, plot_fits

    true_beta, all_x, y, _ = bayes.chapter_data()
    fit = fit_elbo(all_x, y, num_samples=8, step_size=0.01, steps=50)
    assert fit.elbos.shape == (50,) and fit.beta_loc.shape == (10,)
    assert fit.plateau > fit.elbos[0] + 30
    assert np.all(fit.beta_scale > 0)
    assert plot_fits([fit], true_beta).startswith(PNG)


def test_sliders_refit_and_redraw() -> None:
    from jaxcourse.exercises.widgets.explorers_bayes import ElboExplorer

    explorer = ElboExplorer(steps=50, keep=2, run=False)
    assert explorer.runs == []
    explorer.num_samples.value = 8
    assert len(explorer.runs) == 1 and bytes(explorer.image.value).startswith(PNG)
    first = explorer.image.value
    explorer.step_size.value = 0.1  # a traced argument: no recompilation
    assert explorer.runs[-1].step_size == pytest.approx(0.1)
    assert explorer.runs[-1].num_samples == 8 and len(explorer.runs) == 2
    assert explorer.image.value != first
    assert "8 samples, step 0.1" in explorer.status.value
    explorer.step_size.value = 0.001
    assert [f.step_size for f in explorer.runs] == pytest.approx([0.1, 0.001])
    explorer.clear_button.click()
    assert len(explorer.runs) == 1
    assert explorer._repr_mimebundle_()["text/plain"] == (
        "ELBO explorer: 50 SGD steps per fit; move a slider to refit."
    )


def test_elbo_explorer_defers_while_grading(monkeypatch) -> None:
    from jaxcourse.exercises.widgets.explorers_bayes import ElboExplorer

    monkeypatch.setenv("JAXCOURSE_GRADING", "1")
    assert ElboExplorer().runs == []
