"""Answers to chapter 4's exercises (topic ``sharding``), as learners write them.

What checking each must give is in ``sharding.toml``. They need 8 devices:
the contract checks them in a process that asks for 8 devices before it
imports this module (nothing here touches a device).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


# -- exercise 1: the target is P("b", "a")
def spec_transposed():
    return P("a", "b")


def spec_replicated():
    return P()


def spec_columns_only():
    return P(None, "a")


def spec_wrong_axis_name():
    return P("model", "a")


def spec_not_a_spec():
    return ("b", "a")


def spec_from_mesh_names():  # correct, spelled differently
    names = ("a", "b")
    return P(names[1], names[0])


def spec_jax_p():  # correct: jax.P is the same class
    return jax.P("b", "a")


def spec_one_axis_tuples():  # correct: a tuple of one mesh axis is that axis
    return P(("b",), ("a",))


def spec_unpacked():  # correct
    rows_then_columns = ["b", "a"]
    return P(*rows_then_columns)


# -- exercise 2 (4x2 data and model parallelism)
def _place(specs, batch_spec):
    def place(params, batch, mesh):
        params = [(jax.device_put(w, NamedSharding(mesh, ws)),
                   jax.device_put(b, NamedSharding(mesh, bs)))
                  for (w, b), (ws, bs) in zip(params, specs)]  # noqa: B905
        return params, jax.device_put(batch, NamedSharding(mesh, batch_spec))
    return place


R = (P(), P())
mp_swapped = _place([R, (P("model", None), P()), (P(None, "model"), P("model")), R],
                    P("batch"))
mp_bias_forgotten = _place([R, (P(None, "model"), P()), (P("model", None), P()), R],
                           P("batch"))
mp_all_replicated = _place([R, R, R, R], P("batch"))
mp_batch_over_model = _place(
    [R, (P(None, "model"), P("model")), (P("model", None), P()), R], P("model"))


def mp_tree_map(params, batch, mesh):  # correct: a pytree of shardings
    specs = [(P(), P()), (P(None, "model"), P("model")), (P("model"), P(None)),
             (P(), P())]
    shardings = jax.tree.map(lambda s: NamedSharding(mesh, s), specs,
                             is_leaf=lambda s: isinstance(s, P))
    params = jax.device_put([tuple(layer) for layer in params], shardings)
    return params, jax.device_put(batch, NamedSharding(mesh, P("batch", None)))


def mp_seed_style(params, batch, mesh):  # correct: unpacked by hand, a tuple back
    def put(x, *spec):
        return jax.device_put(x, NamedSharding(mesh, P(*spec)))
    (W1, b1), (W2, b2), (W3, b3), (W4, b4) = params
    W1, b1 = put(W1), put(b1)
    W2, b2 = put(W2, None, "model"), put(b2, "model")
    W3, b3 = put(W3, "model", None), put(b3)
    W4, b4 = put(W4), put(b4)
    return ((W1, b1), (W2, b2), (W3, b3), (W4, b4)), put(batch, "batch", None)


def mp_by_index(params, batch, mesh):  # correct: a loop over the layers
    placed = []
    for i, (w, b) in enumerate(params):
        w_spec, b_spec = {1: (P(None, "model"), P("model")),
                          2: (P("model", None), P())}.get(i, (P(), P()))
        placed.append((jax.device_put(w, NamedSharding(mesh, w_spec)),
                       jax.device_put(b, NamedSharding(mesh, b_spec))))
    inputs, targets = batch
    rows = NamedSharding(mesh, P("batch"))
    return placed, (jax.device_put(inputs, rows), jax.device_put(targets, rows))


# -- exercise 4
def hidden_forgot_constraint(mesh):
    @jax.jit
    def hidden_layer(x, w):
        return jax.nn.relu(x @ w)
    return hidden_layer


def hidden_constraint_discarded(mesh):
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("batch", "model")))
        return h
    return hidden_layer


def _constrained_to(*spec):
    """make_hidden_layer with h constrained to P(*spec) (right: "batch", "model")."""
    def make_hidden_layer(mesh):
        @jax.jit
        def hidden_layer(x, w):
            h = jax.nn.relu(x @ w)
            return jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(*spec)))
        return hidden_layer
    return make_hidden_layer


hidden_transposed = _constrained_to("model", "batch")
hidden_replicated = _constrained_to()
hidden_wrong_axis_name = _constrained_to("batch", "data")


def hidden_split_contracting(mesh):
    @jax.jit
    def hidden_layer(x, w):
        split = NamedSharding(mesh, P("batch", "model"))
        x = jax.lax.with_sharding_constraint(x, split)
        return jax.nn.relu(x @ w)
    return hidden_layer


def hidden_split_w_rows(mesh):
    def constrain(a, *spec):
        return jax.lax.with_sharding_constraint(a, NamedSharding(mesh, P(*spec)))

    return jax.jit(lambda x, w: constrain(jax.nn.relu(x @ constrain(w, "model", None)),
                                          "batch", "model"))


def hidden_split_w_columns(mesh):  # correct: constrain w's columns, h follows
    def hidden_layer(x, w):
        w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P(None, "model")))
        h = jnp.maximum(x @ w, 0)
        target = NamedSharding(mesh, P("batch", "model"))
        return jax.lax.with_sharding_constraint(h, target)
    return jax.jit(hidden_layer)


def hidden_not_jitted(mesh):  # correct: the check compiles it anyway
    target = NamedSharding(mesh, P("batch", "model"))

    def hidden_layer(x, w):
        return jax.lax.with_sharding_constraint(jax.nn.relu(jnp.dot(x, w)), target)
    return hidden_layer


def hidden_out_shardings(mesh):  # correct: jit's out_shardings states the layout
    return jax.jit(lambda x, w: jax.nn.relu(x @ w),
                   out_shardings=NamedSharding(mesh, P("batch", "model")))


def hidden_own_fixed_mesh(mesh):  # wrong: a 4x2 mesh written in, not the one given
    from exercise_kit.sharding_checks import auto_mesh
    fixed = auto_mesh((4, 2), ("batch", "model"))

    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        target = NamedSharding(fixed, P("batch", "model"))
        return jax.lax.with_sharding_constraint(h, target)
    return hidden_layer


# -- exercise 4: layouts of two_layers that need no collective
def free_tensor_parallel(mesh):  # the chapter's tensor-parallel pair
    batch, model = mesh.axis_names
    return P(batch), P(None, model), P(model)


def free_nothing_split(mesh):
    return P(), P(), P()


def free_batch_one_axis(mesh):
    return P(mesh.axis_names[0]), P(), P()


def free_names_written_in(mesh):  # the 4x2 mesh's names, not the mesh given
    return P(("data", "model")), P(), P()


def free_strings(mesh):  # not PartitionSpecs
    return "data", None, None


def free_axes_reversed(mesh):  # correct: the other order of the two axes
    return P(tuple(reversed(mesh.axis_names))), P(), P()


def free_spelled_out(mesh):  # correct: every dimension named, a list back
    both = tuple(mesh.axis_names)
    return [P(both, None), P(None, None), P(None, None)]


def free_jax_p(mesh):  # correct: jax.P, the axes unpacked from the mesh
    data, model = mesh.axis_names
    return jax.P((data, model)), jax.P(), jax.P()


# -- exercise 5 (Explicit mode): x split by rows, w by columns, over one axis
def cheap_plain(x, w):  # JAX refuses
    return x @ w


def cheap_gather_w(x, w):
    return x @ jax.reshard(w, P())


def cheap_gather_x(x, w):
    return jax.reshard(x, P()) @ w


def cheap_gather_both(x, w):
    return jax.reshard(x, P()) @ jax.reshard(w, P())


def cheap_on_the_host(x, w):  # NumPy does not trace
    import numpy as np
    return np.asarray(x) @ np.asarray(w)


def cheap_batch_vs_contracted(x, w):  # x's rows against x's columns
    rows, contracted = x.shape
    if rows <= contracted:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())


def cheap_small_batch_threshold(x, w):  # "a small batch" taken as under 100 rows
    if x.shape[0] < 100:
        return jnp.dot(jax.reshard(x, P()), w)
    return jnp.dot(x, jax.reshard(w, P()))


def cheap_out_sharding(x, w):  # correct: name the output's layout instead
    axis = jax.typeof(x).sharding.spec[0]
    spec = P(None, axis) if x.size <= w.size else P(axis, None)
    return jnp.matmul(x, w, out_sharding=spec)


def cheap_rows_against_columns(x, w):  # correct: m*k <= k*n is m <= n
    if x.shape[0] <= w.shape[1]:
        return jnp.dot(jax.reshard(x, P()), w)
    return jnp.dot(x, jax.reshard(w, P()))


def cheap_nbytes(x, w):  # correct: compare the bytes themselves
    whole = P()
    if x.size * x.dtype.itemsize <= w.size * w.dtype.itemsize:
        x = jax.reshard(x, whole)
    else:
        w = jax.reshard(w, whole)
    return jnp.einsum("ik,kj->ij", x, w)
