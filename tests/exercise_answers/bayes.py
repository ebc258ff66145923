"""Answers to chapter 3's exercises (topic ``bayes``), as learners write them.

What checking each must give is in ``bayes.toml``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import jax.scipy as jsp
import numpy as np

from solutions import bayes
from solutions.bayes import log_joint

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
