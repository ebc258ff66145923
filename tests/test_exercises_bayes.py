"""Chapter 3's exercises: realistic wrong answers are rejected with a message that
names the problem; alternative correct answers are accepted; the ELBO explorer
works headlessly."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import jax.scipy as jsp
import nbformat
import numpy as np
import pytest

from jaxcourse.exercises import check
from solutions import bayes
from solutions.bayes import log_joint

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "03_vmap_bayesian_exercises.ipynb"
IDS = ["bayes.batched_log_joint", "bayes.vmapped_log_joint", "bayes.sample_betas",
       "bayes.elbo_value_and_grad", "bayes.ascent_step"]

# ---- wrong answers ------------------------------------------------------------


def batched_no_axis(beta, all_x, y):
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0))
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T
    return result + jnp.sum(-jax.nn.softplus(-signs * logits))


def batched_no_transpose(beta, all_x, y):
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T)
    return result + jnp.sum(-jax.nn.softplus(-signs * logits), axis=-1)


def batched_axis_zero(beta, all_x, y):
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=0)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T
    return result + jnp.sum(-jax.nn.softplus(-signs * logits), axis=0)


def batched_python_loop(beta, all_x, y):
    return jnp.stack([log_joint(b, all_x, y) for b in beta])


def batched_labels_as_signs(beta, all_x, y):
    # Forgets the sign trick: labels 0/1 used where signs -1/+1 are needed.
    result = jnp.sum(jsp.stats.norm.logpdf(beta), axis=-1)
    logits = jnp.dot(all_x, beta.T).T
    return result + jnp.sum(-jax.nn.softplus(-y * logits), axis=-1)


def vmapped_in_axes_zero(betas, all_x, y, prior_scale=1.0):
    return jax.vmap(log_joint, in_axes=(0, 0, 0, None))(betas, all_x, y, prior_scale)


def vmapped_default_in_axes(betas, all_x, y, prior_scale=1.0):
    return jax.vmap(log_joint)(betas, all_x, y, prior_scale)


def vmapped_kwarg(betas, all_x, y, prior_scale=1.0):
    batched = jax.vmap(log_joint, in_axes=(0, None, None))
    return batched(betas, all_x, y, prior_scale=prior_scale)


def vmapped_drops_prior_scale(betas, all_x, y, prior_scale=1.0):
    return jax.vmap(log_joint, in_axes=(0, None, None))(betas, all_x, y)


def vmapped_python_loop(betas, all_x, y, prior_scale=1.0):
    return jnp.array([log_joint(b, all_x, y, prior_scale) for b in betas])


def sample_no_exp(key, beta_loc, beta_log_scale, num_samples):
    eps = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return beta_loc + beta_log_scale * eps


def sample_variance(key, beta_loc, beta_log_scale, num_samples):
    eps = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(beta_log_scale / 2) * eps


def sample_split_key(key, beta_loc, beta_log_scale, num_samples):
    key, subkey = jax.random.split(key)
    eps = jax.random.normal(subkey, (num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(beta_log_scale) * eps


def sample_one(key, beta_loc, beta_log_scale, num_samples):
    return beta_loc + jnp.exp(beta_log_scale) * jax.random.normal(key, beta_loc.shape)


def sample_numpy_noise(key, beta_loc, beta_log_scale, num_samples):
    eps = np.random.default_rng(0).normal(size=(num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(beta_log_scale) * eps.astype(np.float32)


def _vi(beta_sample, all_x, y, prior_scale=10.0):
    return jax.vmap(log_joint, in_axes=(0, None, None, None))(
        beta_sample, all_x, y, prior_scale)


def elbo_no_entropy(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(loc, log_scale):
        return jnp.mean(_vi(loc + jnp.exp(log_scale) * epsilon, all_x, y))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_entropy_minus(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(loc, log_scale):
        joint = jnp.mean(_vi(loc + jnp.exp(log_scale) * epsilon, all_x, y))
        return joint - jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_sum(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(loc, log_scale):
        joint = jnp.sum(_vi(loc + jnp.exp(log_scale) * epsilon, all_x, y))
        return joint + jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_not_reparameterized(beta_loc, beta_log_scale, epsilon, all_x, y):
    beta_sample = beta_loc + jnp.exp(beta_log_scale) * epsilon

    def elbo(loc, log_scale):
        joint = jnp.mean(_vi(beta_sample, all_x, y))
        return joint + jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_prior_one(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(loc, log_scale):
        joint = jnp.mean(_vi(loc + jnp.exp(log_scale) * epsilon, all_x, y, 1.0))
        return joint + jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_reference_constant(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(loc, log_scale):
        joint = jnp.mean(_vi(loc + jnp.exp(log_scale) * epsilon, all_x, y))
        return joint + jnp.sum(log_scale - 0.5 * np.log(2 * np.pi))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_default_argnums(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(loc, log_scale):
        joint = jnp.mean(_vi(loc + jnp.exp(log_scale) * epsilon, all_x, y))
        return joint + jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))

    return jax.value_and_grad(elbo)(beta_loc, beta_log_scale)


def step_descent(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    value, (g_loc, g_scale) = bayes.elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    return value, beta_loc - step_size * g_loc, beta_log_scale - step_size * g_scale


def step_loc_only(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    value, (g_loc, _) = bayes.elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    return value, beta_loc + step_size * g_loc, beta_log_scale


def step_fixed(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    value, (g_loc, g_scale) = bayes.elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    return value, beta_loc + 0.01 * g_loc, beta_log_scale + 0.01 * g_scale


def step_value_after(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    _, (g_loc, g_scale) = bayes.elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    loc, scale = beta_loc + step_size * g_loc, beta_log_scale + step_size * g_scale
    value, _ = bayes.elbo_value_and_grad(loc, scale, epsilon, all_x, y)
    return value, loc, scale


WRONG = [
    ("bayes.ascent_step", step_descent, "that is descent"),
    ("bayes.ascent_step", step_loc_only, "beta_log_scale did not move"),
    ("bayes.ascent_step", step_fixed, "the step size is written in"),
    ("bayes.ascent_step", step_value_after, "the first returned value: wrong values"),
    ("bayes.batched_log_joint", batched_no_axis, "the sums have no axis"),
    ("bayes.batched_log_joint", batched_no_transpose, "transpose them"),
    ("bayes.batched_log_joint", batched_axis_zero, "summed over the batch axis"),
    ("bayes.batched_log_joint", batched_python_loop,
     "a Python loop over the examples?"),
    ("bayes.batched_log_joint", batched_labels_as_signs, "wrong values"),
    ("bayes.vmapped_log_joint", vmapped_in_axes_zero,
     "the data were batched too"),
    ("bayes.vmapped_log_joint", vmapped_default_in_axes, "raised ValueError"),
    ("bayes.vmapped_log_joint", vmapped_kwarg, "raised ValueError"),
    ("bayes.vmapped_log_joint", vmapped_drops_prior_scale,
     "prior_scale is ignored"),
    ("bayes.vmapped_log_joint", vmapped_python_loop,
     "a Python loop over the examples?"),
    ("bayes.sample_betas", sample_no_exp, "scale by jnp.exp(beta_log_scale)"),
    ("bayes.sample_betas", sample_variance, "not log of the variance"),
    ("bayes.sample_betas", sample_split_key, "draw it from `key` itself"),
    ("bayes.sample_betas", sample_one, "wrong shape"),
    ("bayes.sample_betas", sample_numpy_noise, "wrong values"),
    ("bayes.elbo_value_and_grad", elbo_no_entropy, "the entropy term is missing"),
    ("bayes.elbo_value_and_grad", elbo_entropy_minus, "the entropy is subtracted"),
    ("bayes.elbo_value_and_grad", elbo_sum, "average them"),
    ("bayes.elbo_value_and_grad", elbo_not_reparameterized,
     "reparameterize inside"),
    ("bayes.elbo_value_and_grad", elbo_prior_one, "prior_scale must be 10.0"),
    ("bayes.elbo_value_and_grad", elbo_reference_constant,
     "the reference run's constant"),
    ("bayes.elbo_value_and_grad", elbo_default_argnums,
     "wrong structure: expected (array, (array, array)), got (array, array)"),
]


@pytest.mark.parametrize(("exercise_id", "answer", "fragment"), WRONG,
                         ids=[f"{e}-{a.__name__}" for e, a, _ in WRONG])
def test_wrong_answer_is_rejected_and_named(exercise_id, answer, fragment) -> None:
    result = check(exercise_id, answer)
    assert not result.passed and result.status == "failed"
    text = " | ".join(result.messages)
    assert fragment in text, text


def test_every_exercise_has_three_wrong_answers() -> None:
    from collections import Counter

    counts = Counter(e for e, _, _ in WRONG)
    assert set(counts) == set(IDS)
    assert min(counts.values()) >= 3


# ---- alternative correct answers ---------------------------------------------


def batched_einsum(beta, all_x, y):
    prior = -0.5 * jnp.sum(beta**2, axis=1) - 0.5 * beta.shape[1] * jnp.log(2 * jnp.pi)
    logits = jnp.einsum("bf,pf->bp", beta, all_x)
    return prior + jnp.sum(jax.nn.log_sigmoid((2 * y - 1) * logits), axis=1)


def batched_matmul(beta, all_x, y):
    prior = jnp.sum(jsp.stats.norm.logpdf(beta), axis=-1)
    logits = beta @ all_x.T
    return prior - jnp.sum(jax.nn.softplus(-(2 * y - 1)[None, :] * logits), axis=-1)


def vmapped_partial(betas, all_x, y, prior_scale=1.0):
    one = functools.partial(log_joint, all_x=all_x, y=y, prior_scale=prior_scale)
    return jax.vmap(one)(betas)


def vmapped_lambda(betas, all_x, y, prior_scale=1.0):
    return jax.vmap(lambda b: log_joint(b, all_x, y, prior_scale))(betas)


def sample_normal_then_scale(key, beta_loc, beta_log_scale, num_samples):
    eps = jax.random.normal(key, shape=(num_samples, len(beta_loc)))
    return eps * jnp.exp(beta_log_scale)[None, :] + beta_loc[None, :]


def elbo_separate_function(beta_loc, beta_log_scale, epsilon, all_x, y):
    vi_log_joint = jax.vmap(functools.partial(log_joint, prior_scale=10.0),
                            in_axes=(0, None, None))

    def elbo(loc, log_scale, eps):
        beta_sample = loc + jnp.exp(log_scale) * eps
        entropy = jnp.sum(log_scale) + loc.shape[0] * 0.5 * (1 + jnp.log(2 * jnp.pi))
        return jnp.mean(vi_log_joint(beta_sample, all_x, y)) + entropy

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale, epsilon)


def elbo_pytree(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(params):
        loc, log_scale = params
        sample = loc + jnp.exp(log_scale) * epsilon
        joint = jnp.mean(jax.vmap(lambda b: log_joint(b, all_x, y, 10.0))(sample))
        return joint + jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))

    return jax.value_and_grad(elbo)((beta_loc, beta_log_scale))


def batched_seed(beta, all_x, y):
    # The seed's hand-batched version: log(1 + exp(.)) and two transposes.
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    logits = jnp.dot(all_x, beta.T).T
    return result + jnp.sum(-jnp.log(1 + jnp.exp(-(2 * y - 1) * logits)), axis=-1)


def vmapped_seed(betas, all_x, y, prior_scale=1.0):
    # The seed's idea, jax.vmap(log_joint), with the data closed over.
    return jax.vmap(lambda beta: bayes.log_joint(beta, all_x, y, prior_scale))(betas)


def sample_seed(key, beta_loc, beta_log_scale, num_samples):
    # The seed draws epsilon with the key it is given, then reparameterizes.
    epsilon = jax.random.normal(key, (num_samples, len(beta_loc)))
    return beta_loc + jnp.exp(beta_log_scale) * epsilon


def sample_exp_then_mul(key, beta_loc, beta_log_scale, num_samples):
    scale = jnp.exp(beta_log_scale)[None, :]
    noise = jax.random.normal(key, (num_samples, scale.shape[1]))
    return beta_loc[None, :] + scale * noise


def elbo_seed(beta_loc, beta_log_scale, epsilon, all_x, y):
    # The seed's elbo, with the entropy's constant the chapter uses.
    def elbo(loc, log_scale):
        sample = loc + jnp.exp(log_scale) * epsilon
        joints = jax.vmap(bayes.log_joint, in_axes=(0, None, None, None))(
            sample, all_x, y, 10.0)
        return jnp.mean(joints, 0) + jnp.sum(log_scale + 0.5 * (np.log(2 * np.pi) + 1))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def step_seed(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    # The seed's loop body: value_and_grad, then += step_size * gradient.
    elbo_val, (beta_loc_grad, beta_log_scale_grad) = bayes.elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    beta_loc += step_size * beta_loc_grad
    beta_log_scale += step_size * beta_log_scale_grad
    return elbo_val, beta_loc, beta_log_scale


def step_tree_map(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    value, grads = bayes.elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    params = (beta_loc, beta_log_scale)
    new = jax.tree.map(lambda p, g: p + step_size * g, params, grads)
    return (value, *new)


def step_list(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    # A list instead of a tuple is not wrong.
    value, (g_loc, g_scale) = bayes.elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    return [value, beta_loc + step_size * g_loc, beta_log_scale + step_size * g_scale]


RIGHT = [
    ("bayes.ascent_step", step_seed),
    ("bayes.ascent_step", step_tree_map),
    ("bayes.ascent_step", step_list),
    ("bayes.batched_log_joint", batched_seed),
    ("bayes.vmapped_log_joint", vmapped_seed),
    ("bayes.sample_betas", sample_seed),
    ("bayes.sample_betas", sample_exp_then_mul),
    ("bayes.elbo_value_and_grad", elbo_seed),
    ("bayes.batched_log_joint", batched_einsum),
    ("bayes.batched_log_joint", batched_matmul),
    ("bayes.vmapped_log_joint", vmapped_partial),
    ("bayes.vmapped_log_joint", vmapped_lambda),
    ("bayes.sample_betas", sample_normal_then_scale),
    ("bayes.elbo_value_and_grad", elbo_separate_function),
    ("bayes.elbo_value_and_grad", elbo_pytree),
]


@pytest.mark.parametrize(("exercise_id", "answer"), RIGHT,
                         ids=[f"{e}-{a.__name__}" for e, a in RIGHT])
def test_alternative_correct_answer_is_accepted(exercise_id, answer) -> None:
    result = check(exercise_id, answer)
    assert result.passed, result.report()


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_passes_its_own_check(exercise_id) -> None:
    name = exercise_id.split(".", 1)[1]
    assert check(exercise_id, getattr(bayes, name)).passed


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
    assert explorer.fits == []
    explorer.num_samples.value = 8
    assert len(explorer.fits) == 1 and bytes(explorer.image.value).startswith(PNG)
    first = explorer.image.value
    explorer.step_size.value = 0.1  # a traced argument: no recompilation
    assert explorer.fits[-1].step_size == pytest.approx(0.1)
    assert explorer.fits[-1].num_samples == 8 and len(explorer.fits) == 2
    assert explorer.image.value != first
    assert "8 samples, step 0.1" in explorer.status.value
    explorer.step_size.value = 0.001
    assert [f.step_size for f in explorer.fits] == pytest.approx([0.1, 0.001])
    explorer.clear_button.click()
    assert len(explorer.fits) == 1
    assert explorer._repr_mimebundle_()["text/plain"] == (
        "ELBO explorer: 50 SGD steps per fit; move a slider to refit."
    )


def test_elbo_explorer_defers_while_grading(monkeypatch) -> None:
    from jaxcourse.exercises.explorers_bayes import ElboExplorer

    monkeypatch.setenv("JAXCOURSE_GRADING", "1")
    assert ElboExplorer().fits == []


# ---- the student notebook ------------------------------------------------------


def test_student_notebook_is_generated_and_stripped() -> None:
    from jaxcourse.exercises import authoring

    master = nbformat.read(ROOT / "solutions" / STUDENT.name, as_version=4)
    student = authoring.student_notebook(master, STUDENT.name)
    text = nbformat.writes(student)
    assert "BEGIN SOLUTION" not in text
    assert text.count("raise NotImplementedError()") >= len(IDS)
    assert STUDENT.read_text() == nbformat.writes(student) + "\n"


@pytest.mark.slow
def test_student_notebook_runs_and_reports_not_attempted(execute_notebook) -> None:
    texts = execute_notebook(STUDENT)
    for exercise_id in IDS:
        assert any(f"{exercise_id}: not attempted yet" in t for t in texts), texts
