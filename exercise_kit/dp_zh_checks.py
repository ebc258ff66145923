"""What chapter 9's checks are made of: the chapter's model, inputs and tolerances.

The checking side of :mod:`solutions.dp_zh`, which registers the exercises (in
Traditional Chinese, and their Simplified-Chinese edition); this module holds
none of their answers. The chapter's model (a 784 → 512 → 10 MLP with swish,
parameters as a list of ``{"w", "b"}`` dicts: :func:`init_params`,
:func:`predict`, :func:`loss_fn`) and its mesh (:func:`data_mesh`) are defined
here, so the exercise notebook (which imports them through
:mod:`solutions.dp_zh`) and the checks train exactly the same thing; the
checks use smaller layer sizes. Then the inputs of the cases, with fixed
seeds so that feedback can be reproduced, what is compared (values, on how
many devices a result lives, each device's block, whether ``jax.shard_map``
is used) and how close two float32 computations must be, derived from the
sums they make (:func:`step_tolerance`, :func:`normalize_tolerance`).

Nothing here touches a device at import time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from exercise_kit.shard_map_checks import has_shard_map
from jaxcourse.numerics import sum_tolerance

NUM_DEVICES = 8
NUM_CLASSES = 10


# --------------------------------------------------------------------------
# 本章的模型（不是練習題，練習題會用到它）
# --------------------------------------------------------------------------


def init_params(key, sizes):
    """He 初始化的 MLP 參數：每層一個 {"w": (n_in, n_out), "b": (n_out,)}."""
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        key, subkey = jax.random.split(key)
        w = jax.random.normal(subkey, (n_in, n_out)) * jnp.sqrt(2.0 / n_in)
        params.append({"w": w, "b": jnp.zeros(n_out)})
    return params


def predict(params, image):
    """一張影像 (n_in,) -> NUM_CLASSES 個 logits；隱藏層用 swish."""
    x = image
    for layer in params[:-1]:
        x = jax.nn.swish(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


batched_predict = jax.vmap(predict, in_axes=(None, 0))


def loss_fn(params, images, labels):
    """交叉熵：整數標籤轉成 one-hot，再與 log-softmax 相乘後取平均."""
    log_probs = jax.nn.log_softmax(batched_predict(params, images))
    return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, NUM_CLASSES) * log_probs, axis=-1))


def data_mesh() -> jax.sharding.Mesh:
    """8 臺裝置排成一列、軸名稱為 "batch" 的網格（本章的 `mesh`），Auto 模式.

    不叫 ``make_mesh``：課程規定每個名為 ``*make_mesh`` 的呼叫都要寫明
    ``axis_types``，而這個函式已經替呼叫者選好了 Auto。
    """
    return jax.make_mesh((NUM_DEVICES,), ("batch",), axis_types=(AxisType.Auto,))


# --------------------------------------------------------------------------
# 檢查規格：輸入都有固定的種子，回饋可以重現
# --------------------------------------------------------------------------


def device_count(out) -> np.ndarray:
    """每個葉節點分布在幾臺裝置上（不是 jax.Array 的算 1 臺）."""
    leaves = jax.tree.leaves(out)
    counts = [len(getattr(leaf, "sharding", None).device_set)
              if isinstance(leaf, jax.Array) else 1 for leaf in leaves]
    return np.array(counts, np.int32)


def with_devices(out):
    """比較數值，也比較結果分布在幾臺裝置上（沒有用 pmap 的答案只在 1 臺上）."""
    return out, device_count(out)


def positive_grid(rows: int, cols: int):
    """輸入：(rows, cols) 的隨機正數 grid."""
    return lambda rng: (rng.uniform(0.5, 2.0, size=(rows, cols)).astype(np.float32),)


def grid_on_mesh(rows: int, cols: int, mesh_shape: tuple[int, int]):
    """(grid, mesh)：grid 依 P("i", "j") 分片在 mesh_shape 的網格上."""

    def make(rng: np.random.Generator) -> tuple:
        mesh = jax.make_mesh(mesh_shape, ("i", "j"),
                             axis_types=(AxisType.Explicit, AxisType.Explicit))
        grid = rng.uniform(0.5, 2.0, size=(rows, cols)).astype(np.float32)
        return jax.device_put(grid, NamedSharding(mesh, P("i", "j"))), mesh

    return make


def values(out):
    """Extract：結果的數值."""
    return np.asarray(out)


def blocks(out):
    """每臺裝置（依 id 排序）拿到結果的哪一塊：每一維的起點與終點."""
    if not isinstance(out, jax.Array):
        raise TypeError(f"回傳的是 {type(out).__name__}，不是分片在網格上的 jax.Array")
    index_map = out.sharding.devices_indices_map(out.shape)
    blocks = [[s.indices(n)[:2] for s, n in zip(index_map[d], out.shape, strict=True)]
              for d in sorted(index_map, key=lambda d: d.id)]
    return np.array(blocks, np.int32)


def uses_shard_map(function, grid, mesh) -> dict:
    """Runner：函式的程式裡有沒有 jax.shard_map（1 或 0）.

    grid / grid.sum() 在分片的 grid 上也會算出對的值（編譯器自己切分、自己加總），
    但這道練習要的是逐裝置的程式和它的 psum。
    """
    try:
        found = has_shard_map(jax.make_jaxpr(lambda g: function(g, mesh))(grid).jaxpr)
    except Exception:  # 只能在 jit 之外執行（例如 jax.set_mesh）：不算錯
        found = True
    return {"shard_map": np.array(int(found), np.int32)}


def np_params(rng: np.random.Generator, sizes: list[int]) -> list[dict]:
    """NumPy 的 MLP 參數，形狀與 init_params 的相同（偏差不是 0）."""
    return [
        {"w": (rng.normal(size=(n_in, n_out)) * np.sqrt(2.0 / n_in)).astype(np.float32),
         "b": (0.1 * rng.normal(size=n_out)).astype(np.float32)}
        for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True)
    ]


def np_batch(rng: np.random.Generator, n: int, n_in: int):
    """影像 (n, n_in) 與它們的整數標籤 (n,)."""
    images = rng.uniform(0.0, 1.0, size=(n, n_in)).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, size=n).astype(np.int32)
    return images, labels


#: 梯度各項大小的上界：把反向傳播換成絕對值（|p - t| 經過 |W| 與 |激活值|）。
#: 各案例的抽樣最多 5.0；每個案例換 200 個種子，最多 8.7。
GRADIENT_TERMS = 10.0


def step_tolerance(sizes: list[int], global_batch: int, step_size: float) -> dict:
    """兩次 float32 計算的一步 SGD（只比梯度時 step_size 為 1）可以差多少.

    梯度串起每一層寬度的和（正向一次、反向一次），再加上全域批次的和（先在裝置上、
    再跨裝置，合起來仍是 global_batch 項的和，怎麼分都一樣）：一階近似下與精確值差在
    gamma_n 之內（n = 2 sum(sizes) + global_batch），相對於各項的大小（GRADIENT_TERMS
    以內）；兩次計算最多差兩倍，再乘上步長。logit 的捨入經由 softmax 造成的誤差不計：
    一階的上界可以更大，但實際的捨入遠遠不到（實測誤差不到這個界的十分之一）。損失和
    第 8 章一樣，取相對於損失本身的 2 gamma_n（rtol），它也涵蓋 p - step_size * g
    最後那一次捨入。
    """
    tolerance = 2 * sum_tolerance(2 * sum(sizes) + global_batch)
    return {"rtol": tolerance, "atol": tolerance * step_size * GRADIENT_TERMS}


def normalize_tolerance(size: int) -> dict:
    """把 size 個正數各除以它們的和：兩次 float32 計算可以差多少.

    正數相加沒有相消，任何順序的和都在精確值的 gamma_size 之內（相對於和本身），除法
    再捨入一次；兩次計算最多差兩倍。
    """
    return {"rtol": 2 * sum_tolerance(size + 1), "atol": 0.0}


def step_inputs(sizes: list[int], per_device: int, step_size: float):
    """pmap_step 的輸入：每臺裝置一份參數、per_device 筆資料，以及步長."""
    def make(rng: np.random.Generator) -> tuple:
        params = np_params(rng, sizes)
        images, labels = np_batch(rng, NUM_DEVICES * per_device, sizes[0])
        stacked = [{k: np.stack([v] * NUM_DEVICES) for k, v in layer.items()}
                   for layer in params]
        return (stacked, images.reshape(NUM_DEVICES, per_device, -1),
                labels.reshape(NUM_DEVICES, per_device), step_size)

    return make


def grads_inputs(sizes: list[int], global_batch: int):
    """data_parallel_grads 的輸入：參數與 global_batch 筆的全域批次."""
    def make(rng: np.random.Generator) -> tuple:
        params = np_params(rng, sizes)
        images, labels = np_batch(rng, global_batch, sizes[0])
        return params, images, labels

    return make
