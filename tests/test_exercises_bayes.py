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
    np.testing.assert_allclose(bayes.batched_log_joint(betas, all_x, y), expected,
                               atol=1e-3)
    np.testing.assert_allclose(bayes.vmapped_log_joint(betas, all_x, y), expected,
                               atol=0.01)


# ---- the ELBO explorer ----------------------------------------------------------

PNG = b"\x89PNG"


def test_fit_elbo_climbs() -> None:
    from jaxcourse.exercises.explorers_bayes import fit_elbo, plot_fits

    true_beta, all_x, y, _ = bayes.chapter_data()
    fit = fit_elbo(all_x, y, num_samples=8, step_size=0.01, steps=50)
    assert fit.elbos.shape == (50,) and fit.beta_loc.shape == (10,)
    assert fit.plateau > fit.elbos[0] + 30
    assert np.all(fit.beta_scale > 0)
    assert plot_fits([fit], true_beta).startswith(PNG)


def test_sliders_refit_and_redraw() -> None:
    from jaxcourse.exercises.explorers_bayes import ElboExplorer

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
    from jaxcourse.exercises.explorers_bayes import ElboExplorer

    monkeypatch.setenv("JAXCOURSE_GRADING", "1")
    assert ElboExplorer().runs == []
