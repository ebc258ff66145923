"""Reference solutions of chapter 9's exercises, in both Chinese editions.

Importing this module registers the exercises ``dp_zh.global_normalize``,
``dp_zh.split_for_devices``, ``dp_zh.replicate``, ``dp_zh.pmap_step``,
``dp_zh.data_parallel_grads`` and ``dp_zh.shard_map_normalize`` with
:mod:`jaxcourse.exercises`, all in Traditional Chinese (``language="zh-Hant"``),
and their Simplified-Chinese twins ``dp_zh_hans.*`` (``language="zh-Hans"``),
whose texts come from ``dp_zh_hans_texts.json``, generated from this module
by ``python -m jaxcourse.zh_hans``.

Three of them run on 8 devices (``jax.pmap`` over 8 devices, a mesh of 8) and
say so with ``devices=8``: the process that checks them must have called
``jaxcourse.devices.use_cpu_devices(8)`` before JAX started, as the exercise
notebook does in its first cell (the grader does it for its own processes).
Nothing here touches a device at import time, so importing this module is safe
in a process with one device.

The chapter's model (a 784 → 512 → 10 MLP with swish, parameters as a list of
``{"w", "b"}`` dicts) is importable from here too (the exercise notebook
imports ``loss_fn``), so the notebook and the checks train exactly the same
thing; the checks use smaller layer sizes. The model, the cases' inputs and
the tolerances are :mod:`exercise_kit.dp_zh_checks`'s part; the longer known
wrong answers are made by :mod:`exercise_kit.dp_zh_mistakes`.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from exercise_kit import dp_zh_mistakes as wrong
from exercise_kit.dp_zh_checks import (
    GRADIENT_TERMS,
    NUM_CLASSES,
    NUM_DEVICES,
    batched_predict,
    blocks,
    data_mesh,
    grads_inputs,
    grid_on_mesh,
    init_params,
    loss_fn,
    normalize_tolerance,
    np_params,
    positive_grid,
    predict,
    step_inputs,
    step_tolerance,
    uses_shard_map,
    values,
    with_devices,
)
from jaxcourse.exercises import Case, Exercise, Mistake, register
from jaxcourse.exercises.checking.editions import edition, read_texts

CHAPTER = "09_dp_zh"


# --------------------------------------------------------------------------
# 參考解答
# --------------------------------------------------------------------------


def global_normalize(grid):
    """用 pmap 包住 vmap，把 (8, n) 的 grid 全域正規化成總和為 1."""

    def normalize_one(x):
        # x 是一個數；psum 同時跨 "i"（裝置）與 "j"（每臺裝置上的元素）
        return x / lax.psum(x, axis_name=("i", "j"))

    return jax.pmap(jax.vmap(normalize_one, axis_name="j"), axis_name="i")(grid)


def split_for_devices(array, num_devices):
    """全域批次 (N, ...) -> (num_devices, N // num_devices, ...).

    第 k 片（連續的 N // num_devices 列）給第 k 臺裝置。
    """
    return array.reshape(num_devices, array.shape[0] // num_devices, *array.shape[1:])


def replicate(tree, num_devices):
    """在每個葉節點前面加一個長度為 num_devices 的軸，每臺裝置一份相同的副本."""
    return jax.tree.map(
        lambda a: jnp.broadcast_to(a, (num_devices, *jnp.shape(a))), tree
    )


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step(params, images, labels, step_size):
    """資料平行的一步 SGD：每臺裝置算區域梯度，再以 pmean 平均."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, axis_name="batch")  # all-reduce：平均 8 臺裝置的梯度
    loss = lax.pmean(loss, axis_name="batch")
    new_params = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
    return new_params, loss


def data_parallel_grads(params, images, labels):
    """用 shard_map 算全域批次的平均梯度：參數複製、資料沿 "batch" 分片."""
    mesh = data_mesh()

    @jax.jit
    @functools.partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(), P("batch"), P("batch")),  # 參數複製，影像與標籤分片
        out_specs=P(),  # 梯度在每臺裝置上都相同
    )
    def grads_fn(params, images, labels):
        def global_loss(p):
            # 對 pmean 之後的全域平均損失微分；複製參數的梯度不必再平均
            return lax.pmean(loss_fn(p, images, labels), axis_name="batch")

        return jax.grad(global_loss)(params)

    return grads_fn(params, images, labels)


def shard_map_normalize(grid, mesh):
    """用 shard_map 在二維網格 ("i", "j") 上把 grid 全域正規化，分片方式不變."""

    @jax.jit
    @functools.partial(jax.shard_map, mesh=mesh, in_specs=P("i", "j"),
                       out_specs=P("i", "j"))
    def normalize_block(block):
        # block 是這臺裝置的一塊：先在裝置上加總，再跨兩個網格軸加總
        return block / lax.psum(jnp.sum(block), axis_name=("i", "j"))

    return normalize_block(grid)


EXERCISES = register(
    Exercise(
        id="dp_zh.global_normalize",
        devices=NUM_DEVICES,
        title="全域正規化：pmap 包住 vmap",
        chapter=CHAPTER,
        language="zh-Hant",
        reference=global_normalize,
        cases=[
            Case("global_normalize(grid)，grid = arange(200) 排成 (8, 25)",
                 lambda rng: (np.arange(200, dtype=np.float32).reshape(8, 25),),
                 extract=with_devices, **normalize_tolerance(200)),
            Case("global_normalize(grid)，grid 為 (8, 3) 的隨機正數",
                 positive_grid(8, 3), extract=with_devices,
                 **normalize_tolerance(24)),
            Case("global_normalize(grid)，grid 為 (8, 16) 的隨機正數",
                 positive_grid(8, 16), seed=1, extract=with_devices,
                 **normalize_tolerance(128)),
            Case("global_normalize(grid)，grid 為 (8, 1)：每臺裝置只有一個數",
                 positive_grid(8, 1), seed=2, extract=with_devices,
                 **normalize_tolerance(8)),
        ],
        hints=[
            "外層 jax.pmap(..., axis_name=\"i\") 把 8 列分給 8 臺裝置，"
            "內層 jax.vmap(..., axis_name=\"j\") 在每臺裝置上向量化一列；"
            "被對映的函式只看見一個數。",
            "被對映的函式裡，jnp.sum(x) 只是這一個數自己；"
            "要跨具名軸求和得用 lax.psum。",
            "lax.psum 的 axis_name 也可以是軸名稱組成的 tuple，"
            "一次跨越好幾個軸；想想總和要涵蓋哪幾個軸。",
        ],
        mistakes=[
            Mistake("只跨內層的 \"j\" 求和：每一列各自正規化，而不是全域正規化。"
                    "psum 要同時跨 (\"i\", \"j\")",
                    wrong.pmap_vmap(lambda x: x / lax.psum(x, "j"))),
            Mistake("只跨外層的 \"i\" 求和：每一行（同一個位置、不同裝置）各自正規化。"
                    "psum 要同時跨 (\"i\", \"j\")",
                    wrong.pmap_vmap(lambda x: x / lax.psum(x, "i"))),
            Mistake("每個數都只除以了自己（得到 1；0 / 0 得到 NaN）："
                    "被對映的函式只看見一個數，jnp.sum 或不求和都一樣；"
                    "請用 lax.psum 跨具名軸求和",
                    wrong.pmap_vmap(lambda x: x / x)),
            Mistake("差了一個倍數：lax.pmean 是平均，不是總和；"
                    "正規化要除以 lax.psum",
                    wrong.pmap_vmap(lambda x: x / lax.pmean(x, ("i", "j")))),
            Mistake("數值對了，但結果只在 1 臺裝置上：請用 jax.pmap "
                    "把 8 列分給 8 臺裝置（內層用 jax.vmap），"
                    "而不是直接 grid / grid.sum()",
                    lambda grid: grid / jnp.sum(grid)),
        ],
    ),
    Exercise(
        id="dp_zh.split_for_devices",
        title="把全域批次切給每臺裝置",
        chapter=CHAPTER,
        language="zh-Hant",
        reference=split_for_devices,
        cases=[
            Case("影像 (256, 784) 切給 8 臺裝置",
                 lambda rng: (rng.uniform(size=(256, 784)).astype(np.float32), 8)),
            Case("標籤 (256,) int32 切給 8 臺裝置",
                 lambda rng: (rng.integers(0, 10, size=256).astype(np.int32), 8)),
            Case("uint8 影像 (64, 28, 28) 切給 8 臺裝置：保留後面的軸與 dtype",
                 lambda rng: (rng.integers(0, 256, size=(64, 28, 28)).astype(np.uint8),
                              8)),
            Case("(12, 3) 切給 4 臺裝置：不要寫死 8 或 32",
                 lambda rng: (np.arange(36, dtype=np.float32).reshape(12, 3), 4)),
            Case("jax.jit 之下（num_devices 是靜態的）：(64, 5) 切給 8 臺",
                 lambda rng: (rng.normal(size=(64, 5)).astype(np.float32), 8),
                 transform="jit"),
        ],
        hints=[
            "結果的形狀是 (num_devices, N // num_devices, *array.shape[1:])："
            "前面加一個裝置軸，後面的軸原封不動。",
            "第 k 臺裝置要拿到連續的第 k 片：array[k * B:(k + 1) * B]，"
            "B = N // num_devices。reshape 的軸順序決定了哪些列放在一起。",
            "一次 reshape 就夠了：新形狀的第一個數是裝置數，"
            "第二個可以交給 -1 推算，其餘照抄原來的形狀。",
        ],
        mistakes=[
            Mistake("軸的順序反了：裝置軸要放在最前面，"
                    "(num_devices, N // num_devices, ...)",
                    lambda a, n: a.reshape(a.shape[0] // n, n, *a.shape[1:])),
            Mistake("形狀對了，但每臺裝置拿到的是間隔取樣的列"
                    "（第 k, k + num_devices, … 列），不是連續的第 k 片："
                    "先 reshape 成 (N // num_devices, num_devices, ...) "
                    "再轉置，列的分配就錯了",
                    lambda a, n: jnp.swapaxes(
                        a.reshape(a.shape[0] // n, n, *a.shape[1:]), 0, 1)),
            Mistake("後面的軸被攤平了：請保留 *array.shape[1:]",
                    lambda a, n: a.reshape(n, -1)),
        ],
    ),
    Exercise(
        id="dp_zh.replicate",
        title="複製參數：每臺裝置一份副本",
        chapter=CHAPTER,
        language="zh-Hant",
        reference=replicate,
        cases=[
            Case("replicate 一個 [6, 5, 3] MLP 的參數到 8 臺裝置",
                 lambda rng: (np_params(rng, [6, 5, 3]), 8)),
            Case("replicate 到 4 臺裝置：不要寫死 8",
                 lambda rng: (np_params(rng, [4, 3]), 4), seed=1),
            Case("replicate 保留每個葉節點的 dtype（int32 的計數器、float32 的權重）",
                 lambda rng: ({"count": np.array(3, np.int32),
                               "w": rng.normal(size=(2, 3)).astype(np.float32)}, 8),
                 seed=2),
            Case("jax.jit 之下（num_devices 是靜態的）",
                 lambda rng: (np_params(rng, [6, 5, 3]), 8), seed=3,
                 transform="jit"),
        ],
        hints=[
            "參數是一個 pytree（由 dict 組成的 list）；"
            "jax.tree.map 把函式套用到每個葉節點，並保留原來的結構。",
            "每個葉節點 a 要變成形狀 (num_devices, *a.shape)：裝置軸加在最前面，"
            "每一片都和 a 一樣。",
            "jnp.broadcast_to 可以把一個陣列「看成」更大的形狀而不真的複製資料；"
            "把 num_devices 份同樣的陣列疊起來（jnp.stack）也行。",
        ],
        mistakes=[
            Mistake("裝置軸要加在最前面（第 0 軸），pmap 沿第 0 軸把副本分給各裝置",
                    lambda tree, n: jax.tree.map(
                        lambda a: jnp.stack([jnp.asarray(a)] * n, axis=-1), tree)),
            Mistake("jnp.tile 沿最後一軸重複，沒有加上新的裝置軸",
                    lambda tree, n: jax.tree.map(lambda a: jnp.tile(a, n), tree)),
            Mistake("只加了一個長度為 1 的軸；要有 num_devices 份副本",
                    lambda tree, n: jax.tree.map(lambda a: jnp.asarray(a)[None], tree)),
        ],
    ),
    Exercise(
        id="dp_zh.pmap_step",
        devices=NUM_DEVICES,
        title="資料平行的一步：pmap 與 lax.pmean",
        chapter=CHAPTER,
        language="zh-Hant",
        reference=pmap_step,
        cases=[
            Case("pmap_step：[20, 16, 10] 的 MLP，8 臺裝置 × 每臺 4 筆，step_size 0.5",
                 step_inputs([20, 16, 10], 4, 0.5),
                 **step_tolerance([20, 16, 10], 32, 0.5)),
            Case("pmap_step 使用 step_size 引數（0.1，另一組資料）",
                 step_inputs([20, 16, 10], 4, 0.1), seed=1,
                 **step_tolerance([20, 16, 10], 32, 0.1)),
            Case("pmap_step：[784, 32, 10] 的 MLP，8 臺裝置 × 每臺 8 筆，step_size 0.5",
                 step_inputs([784, 32, 10], 8, 0.5), seed=2,
                 **step_tolerance([784, 32, 10], 64, 0.5)),
        ],
        hints=[
            "每臺裝置先用 jax.value_and_grad(loss_fn) 算出自己那一片資料上的"
            "損失與梯度。",
            "集體運算可以直接作用在整個梯度 pytree 上；要的是 8 臺裝置的平均，"
            "不是總和（總和會得到 8 倍的梯度）。損失也一樣要跨 \"batch\" 平均，"
            "每臺裝置回報的才是全域批次的損失。",
            "更新要對每一對 (參數, 梯度) 葉節點做同一件事：jax.tree.map 可以同時走訪"
            "兩棵結構相同的樹。最後回傳 (new_params, loss)。",
        ],
        mistakes=[
            Mistake("更新幅度是正確的 8 倍：lax.psum 把 8 份梯度加總，"
                    "資料平行要的是平均 lax.pmean",
                    wrong.pmap_step_with(lambda g: lax.psum(g, "batch"))),
            Mistake("各裝置的參數不一樣了：每臺裝置只用了自己的區域梯度"
                    "（在 pmap 裡對 pmean 之後的損失微分也是如此，pmap 不會像 "
                    "shard_map 那樣自動加總）。請用 lax.pmean(grads, \"batch\") "
                    "平均梯度，參數副本才會一致",
                    wrong.pmap_step_with(lambda g: g)),
            Mistake("參數對了，但各裝置回報的損失不同：損失也要 lax.pmean",
                    wrong.pmap_step_with(lambda g: lax.pmean(g, "batch"),
                                    reduce_loss=False)),
            Mistake("梯度下降要減去梯度（p - step_size * g），不是加上",
                    wrong.pmap_step_with(lambda g: jax.tree.map(
                        lambda x: -x, lax.pmean(g, "batch")))),
        ],
    ),
    Exercise(
        id="dp_zh.data_parallel_grads",
        devices=NUM_DEVICES,
        title="現行的 API：用 shard_map（或分片的 jit）算平均梯度",
        chapter=CHAPTER,
        language="zh-Hant",
        reference=data_parallel_grads,
        cases=[
            Case("[20, 16, 10] 的 MLP，全域批次 32 筆（8 臺 × 4 筆）",
                 grads_inputs([20, 16, 10], 32), extract=with_devices,
                 **step_tolerance([20, 16, 10], 32, 1.0)),
            Case("[784, 32, 10] 的 MLP，全域批次 64 筆",
                 grads_inputs([784, 32, 10], 64), seed=1, extract=with_devices,
                 **step_tolerance([784, 32, 10], 64, 1.0)),
            Case("jax.jit 之下：[20, 16, 10] 的 MLP，全域批次 16 筆",
                 grads_inputs([20, 16, 10], 16), seed=2, transform="jit",
                 extract=with_devices, **step_tolerance([20, 16, 10], 16, 1.0)),
        ],
        hints=[
            "先決定三個輸入與輸出的分片規格：參數在每臺裝置上都是完整的一份，"
            "影像與標籤沿網格的 \"batch\" 軸切開，梯度最後在每臺裝置上都相同。",
            "在 shard_map 裡，對複製參數的梯度會自動跨裝置加總（psum）；"
            "先 pmean 區域梯度仍然是 8 倍。請對「pmean 之後的全域平均損失」微分。",
            "在每臺裝置的函式裡，先寫一個回傳「全域平均損失」的小函式"
            "（區域損失再跨 \"batch\" 平均），再對它取梯度。"
            "或者不寫 shard_map：把資料以 NamedSharding 沿 \"batch\" 放好，"
            "讓 jax.jit 編譯單一裝置的梯度函式。",
        ],
        mistakes=[
            Mistake("梯度是正確值的 8 倍：shard_map 已自動把複製參數的梯度加總，"
                    "之後再 pmean 也不會變。請對 pmean 之後的全域損失微分",
                    wrong.shard_map_grads(
                        lambda p, x, y: lax.pmean(jax.grad(loss_fn)(p, x, y),
                                                  "batch"))),
            Mistake("梯度是正確值的 64 倍：自動加總之後又 psum 了一次。"
                    "請對 pmean 之後的全域損失微分",
                    wrong.shard_map_grads(
                        lambda p, x, y: lax.psum(jax.grad(loss_fn)(p, x, y),
                                                 "batch"))),
            Mistake("數值對了，但梯度只在 1 臺裝置上算：請用 jax.shard_map "
                    "或分片的 jax.jit，讓 8 臺裝置各算一片資料",
                    lambda p, x, y: jax.grad(loss_fn)(p, x, y)),
        ],
    ),
    Exercise(
        id="dp_zh.shard_map_normalize",
        devices=NUM_DEVICES,
        title="用 shard_map 在二維網格上做全域正規化",
        chapter=CHAPTER,
        language="zh-Hant",
        reference=shard_map_normalize,
        cases=[
            Case("(8, 6) 的 grid 依 P(\"i\", \"j\") 分片在 4 × 2 的網格上：數值",
                 grid_on_mesh(8, 6, (4, 2)), extract=values,
                 **normalize_tolerance(48)),
            Case("(4, 12) 的 grid 分片在 2 × 4 的網格上：數值",
                 grid_on_mesh(4, 12, (2, 4)), seed=1, extract=values,
                 **normalize_tolerance(48)),
            Case("(8, 2) 的 grid 分片在 8 × 1 的網格上：數值",
                 grid_on_mesh(8, 2, (8, 1)), seed=2, extract=values,
                 **normalize_tolerance(16)),
            Case("(4, 50) 的 grid 分片在 4 × 2 的網格上（本章的例子）：數值",
                 grid_on_mesh(4, 50, (4, 2)), seed=3, extract=values,
                 **normalize_tolerance(200)),
            Case("4 × 2 的網格上，結果和 grid 一樣依 P(\"i\", \"j\") 分片"
                 "（比較每臺裝置拿到的那一塊）",
                 grid_on_mesh(8, 6, (4, 2)), extract=blocks),
            Case("函式用 jax.shard_map 寫出逐裝置的程式（在它的 jaxpr 裡找 shard_map）",
                 grid_on_mesh(8, 6, (4, 2)), runner=uses_shard_map),
            Case("2 × 4 的網格上，結果和 grid 一樣分片（比較每臺裝置拿到的那一塊）",
                 grid_on_mesh(4, 12, (2, 4)), seed=1, extract=blocks),
        ],
        hints=[
            "每臺裝置上的函式只看見自己的一塊（block）。先想清楚：要除的是"
            "整個陣列的總和，而這一塊的總和只是其中一部分。",
            "輸入怎麼切，輸出就怎麼拼回去：in_specs 與 out_specs 都照 grid 的分片寫。",
            "先在裝置上用 jnp.sum 把這一塊加成一個數，再用 lax.psum 跨裝置加總；"
            "網格有兩個軸，總和要涵蓋哪幾個？",
        ],
        mistakes=[
            Mistake("只跨 \"i\" 求和：同一欄（\"j\" 相同）的幾塊各自正規化，"
                    "而不是全域正規化。psum 要同時跨 (\"i\", \"j\")",
                    wrong.blocks_with(lambda b: b / lax.psum(jnp.sum(b), "i"))),
            Mistake("只跨 \"j\" 求和：同一列（\"i\" 相同）的幾塊各自正規化，"
                    "而不是全域正規化。psum 要同時跨 (\"i\", \"j\")",
                    wrong.blocks_with(lambda b: b / lax.psum(jnp.sum(b), "j"))),
            Mistake("每一塊只除以自己的總和：沒有跨裝置加總，"
                    "要用 lax.psum 跨兩個網格軸",
                    wrong.blocks_with(lambda b: b / jnp.sum(b))),
            Mistake("lax.psum 加總的是各裝置同一位置的元素，不是整塊的總和："
                    "先用 jnp.sum 把這一塊加成一個數，再 psum",
                    wrong.blocks_with(lambda b: b / lax.psum(b, ("i", "j")))),
            Mistake("差了一個倍數：lax.pmean 是平均，不是總和；"
                    "正規化要除以 lax.psum",
                    wrong.blocks_with(lambda b: b / lax.pmean(jnp.sum(b), ("i", "j")))),
        ],
    ),
)

# The Simplified-Chinese edition of chapter 9 (topic dp_zh_hans): the same
# exercises, checked the same way, with every text a learner reads taken from
# the table that `python -m jaxcourse.zh_hans` generates from the texts above.
register(*edition(
    EXERCISES, read_texts(Path(__file__).with_name("dp_zh_hans_texts.json")),
    key="dp_zh_hans", chapter="09_dp_zh_hans", language="zh-Hans",
))

__all__ = [
    "GRADIENT_TERMS",
    "NUM_CLASSES",
    "NUM_DEVICES",
    "batched_predict",
    "data_mesh",
    "data_parallel_grads",
    "global_normalize",
    "init_params",
    "loss_fn",
    "pmap_step",
    "predict",
    "replicate",
    "shard_map_normalize",
    "split_for_devices",
]
