"""The exercise system's message catalogue: English, Traditional and Simplified Chinese.

Every sentence and label a learner or teacher reads from a check, the check
panel, an explorer (its controls, figures, status lines and plain-text form)
or the grader comes from :data:`MESSAGES`, keyed by a short name and
formatted with :meth:`str.format`.
An exercise picks its language (``language="zh-Hant"``); a key missing from a
language falls back to English, so a new key never breaks a chapter. The
Traditional-Chinese texts use Taiwan's terms (引數 for a function's arguments,
參數 for a model's parameters, 行程 for a process); the Simplified-Chinese
ones (``"zh-Hans"``) are derived from them by ``python -m jaxcourse.zh_hans``.
"""

from __future__ import annotations

__all__ = ["EXCEPTIONS", "LANGUAGES", "MESSAGES", "explain_error", "message",
           "ordinal"]

LANGUAGES = ("en", "zh-Hant", "zh-Hans")

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        # Buttons and panel text.
        "check": "Check",
        "hint": "Hint",
        "show_solution": "Show solution",
        "hide_solution": "Hide solution",
        "hint_n": "Hint {n} of {total}",
        "no_hints": "This exercise has no hints.",
        "no_more_hints": "No more hints.",
        "solution_heading": "Reference solution",
        "solution_unavailable": "The reference source is not available.",
        # Summaries.
        "summary": "{id}: {passed}/{total} tests passed",
        "summary_not_attempted": "{id}: not attempted yet (0/{total} tests)",
        "summary_deferred": "{id}: graded separately",
        "checking": "Checking…",
        "attempt": "check {n}",
        # Where in a returned value a problem is (see judging.where).
        "structure_array": "array",
        "path_first_item": "the {ordinal} returned value",
        "path_first_key": "the returned entry {key}",
        "path_item": "the {ordinal} item of {whole}",
        "path_key": "entry {key} of {whole}",
        "at_path": "{where}: {problem}",
        # Between a label and its text (Chinese uses the full-width colon).
        "label_sep": ": ",
        "all_passed": "All tests passed.",
        # One test's verdict.
        "ok": "{test}: ok",
        "failed": "{test}: {problem}",
        "expected_got": "expected {expected}, got {got}",
        "not_attempted": "not attempted yet (the function still raises "
        "NotImplementedError)",
        "missing_function": "no function named `{name}` was found",
        "not_callable": "`{name}` is a {type}, not a function",
        "raised": "raised {error}",
        "raised_under": "under {transform}, raised {error}",
        "jit_advice": "the code needs a concrete value where JAX only has a "
        "traced one: use jnp functions and jnp.where instead of NumPy, "
        "Python `if`, int() or float() on arrays",
        "tracer_leak": "a JAX tracer escaped a transformation (did you store a "
        "value computed inside jit/grad/vmap in a global?)",
        "timeout": "did not finish within {seconds:g} s (an endless loop, or far "
        "too slow?)",
        "skipped_after_timeout": "skipped: an earlier test ran out of time",
        "returned_none": "returned None: did you forget `return`?",
        "returned_type": "returned a {type} where {expected} was expected",
        "returned_tracer": "returned a JAX tracer that escaped a transformation",
        "wrong_structure": "wrong structure: expected {expected}, got {got}",
        "wrong_shape": "wrong shape: expected {expected}, got {got}",
        "wrong_dtype": "wrong dtype: expected {expected}, got {got}",
        "wrong_kind": "wrong dtype: expected a {expected} type, got {got}",
        "has_nan": "the result contains NaN in {count} of {size} entries",
        "wrong_values": "wrong values: expected {expected}, got {got} (largest "
        "difference {diff:.3g} at index {index})",
        "wrong_values_large": "wrong values in {count} of {size} entries (largest "
        "difference {diff:.3g} at index {index}: expected {expected:.4g}, got "
        "{got:.4g})",
        "mutated_input": "changed its input in place (argument {arg}); return a "
        "new value instead",
        "transposed": "the axes look swapped",
        "not_vectorized": "the traced program grows with the batch "
        "({small} operations for {n_small} examples, {large} for {n_large}): "
        "a Python loop over the examples? Use array operations or jax.vmap",
        "printed": "(its printed output, {chars} characters, was hidden)",
        "array": "an array",
        "float_kind": "floating-point",
        "int_kind": "integer",
        # Transform names.
        "under_jit": "jax.jit",
        "under_grad": "jax.grad",
        "under_vmap": "jax.vmap",
        "under_trace": "jax.make_jaxpr",
        # Grading.
        "grading_timeout": "the notebook ran past the {seconds:g} s time limit",
        "grading_crash": "the notebook process died ({how})",
        "grading_unreadable": "its results could not be read ({why})",
        "grading_cell_errors": "cells that raised: {cells}",
        # Every display (the check panel and the explorers).
        "kernel_gone": "The kernel restarted: run the cells above again.",
        "explorer": "explorer",
        "clear": "Clear",
        "batch_size": "batch size",
        "sgd_step": "SGD step",
        "synthetic_data": "synthetic data",
        # Chapter 1's learning-rate explorer.
        "lr_learning_rate": "learning rate",
        "lr_training_loss": "training loss",
        "lr_title": "{dataset}: {train:,} training images, accuracy on {test:,} test "
        "images",
        "lr_run": "lr={lr:.3g}, batch={batch}: test acc {accuracy:.2f}",
        "lr_text": "Learning-rate explorer: {steps} SGD steps per run; move a slider "
        "to retrain.",
        # Chapter 2's loader explorer.
        "loader_per_sample": "per-sample transform + numpy_collate",
        "loader_batched": "whole arrays + BatchSampler",
        "loader_rate": "examples per second",
        "loader_title": "{dataset}: the first {n:,} training images",
        "loader_timing": "batch size {batch}: per-sample {per_sample:,.0f} "
        "examples/s, batched {batched:,.0f} examples/s ({speedup:.0f}x)",
        "loader_text": "Loader explorer: {n} examples per measurement; move the "
        "slider to time another batch size.",
        # Chapter 3's ELBO explorer.
        "elbo_samples": "samples per step",
        "elbo_step_size": "step size",
        "elbo_estimate": "ELBO (Monte Carlo estimate)",
        "elbo_mean": "mean ± 2σ",
        "elbo_true_beta": "true β",
        "elbo_coefficient": "coefficient j",
        "elbo_title": "the chapter's data: {points} simulated points, {features} "
        "features",
        "elbo_fit": "{samples} samples, step {step:.3g}: final ELBO ≈ {elbo:.1f}",
        "elbo_text": "ELBO explorer: {steps} SGD steps per fit; move a slider to "
        "refit.",
        # Chapter 4's sharding explorer.
        "sharding_mesh": "mesh (a×b)",
        "sharding_rows": "P( rows:",
        "sharding_columns": ", columns:",
        "sharding_operation": "operation",
        "sharding_piece": "1 piece of shape {shape}, {where}",
        "sharding_pieces": "{n} pieces of shape {shape}, {where}",
        "sharding_one_device": "each on one device",
        "sharding_copies": "each stored on {copies} devices",
        "sharding_where": "CPU {ids}: rows {rows}, columns {columns}",
        "sharding_local": "{operation}: no communication (every device computes its "
        "own piece)",
        "sharding_communicates": "{operation}: communicates ({collectives})",
        "sharding_invalid": "{spec} is not a valid layout here: {error}",
        "sharding_layout": "{spec} on the {mesh} mesh: {layout}",
        "sharding_text": "Sharding explorer: choose a mesh, a PartitionSpec and an "
        "operation; the layout and its communication update.",
        # Chapter 5's collective explorer.
        "collective": "collective",
        "devices": "devices",
        "collective_entries": "entries per device",
        "collective_problem": "{name} over {n} devices cuts every block into {n} "
        "equal pieces: the block length must be a multiple of {n}, and {length} is not",
        "collective_head": "{name} over {n} devices, blocks of {length} float32 "
        "({size} bytes)",
        "collective_compiled": "compiled to: {collectives}",
        "collective_none": "no collective",
        "collective_matches": "matches the NumPy model of the collective: {answer}",
        "yes": "yes",
        "no": "NO",
        "collective_sends": "each device sends about {sent} bytes ({blocks:g} blocks, "
        "ring algorithm)",
        "collective_device": "device {d}: {before} -> {after}",
        "collective_more": ", ... ({n} entries)",
        "collective_text": "Collective explorer: choose a collective, the number of "
        "devices and the entries per device; every device's block before and after, "
        "the compiled collective and the bytes sent update.",
        # Chapter 6's batch-split explorer.
        "split_processes": "processes",
        "split_devices": "devices per process",
        "split_batch": "global batch",
        "split_problem": "{batch} rows do not split evenly over {devices} devices "
        "({processes} processes × {per_process}): "
        "jax.make_array_from_process_local_data would refuse this batch. Use a "
        "multiple of {devices}: drop to {lower} rows or pad to {upper} (and mask the "
        "padding).",
        "split_head_process": "process",
        "split_head_loads": "loads",
        "split_head_device": "local device",
        "split_head_position": "mesh position",
        "split_head_holds": "holds rows",
        "split_rows": "rows {start}:{stop}",
        "split_summary": "Each process loads {per_process} rows; each device holds "
        "{per_device}.",
        "split_legend": "process {p}",
        "split_xlabel": "row of the global batch ({batch} rows)",
        "split_text": "Batch-split explorer: choose the processes, devices per "
        "process and global batch size; the rows each device holds update.",
        # Chapter 7's data-parallel explorer.
        "dp_name": "Data-parallel explorer",
        "dp_devices": "devices",
        "dp_per_device": "batch per device",
        "dp_collective": "collective",
        "dp_axes_both": "psum(x, (\"i\", \"j\")): over both axes",
        "dp_axes_j": "psum(x, \"j\"): within each device only",
        "dp_axes_i": "psum(x, \"i\"): across the devices only",
        "dp_axes_none": "no psum (x / x)",
        "dp_device_k": "device {k}",
        "dp_xlabel": "example on each device (vmap's axis \"j\")",
        "dp_title": "the values after normalization: they sum to {total}",
        "dp_no_sum": "no sum",
        "dp_psum_over": "psum over {axes}",
        "dp_more": ", …",
        "dp_summary": "<b>global batch</b> = {d} devices × {b} each = {n} "
        "examples<br><b>images split for the devices</b>: ({n}, 28, 28) → {images}; "
        "each device gets {shard}<br><b>{axes}</b>: sum on each device [{sums}], sum "
        "of everything {total} (the result lives on {on} devices)",
        "dp_text": "Data-parallel explorer: change the devices, the batch per device "
        "or the psum's axes, and see the global batch, each device's shape and the "
        "sums.",
        # The grader's own sentences (runner and grading).
        "grading_empty": "the file is empty",
        "grading_not_json": "the file is not JSON ({why})",
        "grading_not_notebook": "the file is JSON but not a notebook ({why})",
        "grading_exited": "the notebook ended its own process ({how}) before the "
        "checks",
        "grading_oom": "it ran out of memory (limit {mb} MB){where}",
        "grading_oom_cells": " in cells {cells}",
        "grading_tamper_write": "it tried to change the course's files ({path}): zero",
        "grading_tamper_read": "it tried to read outside its own folder ({path}): zero",
        "grading_tamper_changed": "the course's files changed while it ran ({files}); "
        "they were restored: zero",
        "grading_feedback_title": "Feedback: {name}",
        "grading_status": "Status: {status}",
        "grading_score": "Score: {total:g} of {count}",
        "grading_exercise": "{id}: {score:.0%}",
    },
    "zh-Hant": {
        "check": "檢查",
        "hint": "提示",
        "show_solution": "顯示解答",
        "hide_solution": "隱藏解答",
        "hint_n": "提示 {n}／{total}",
        "no_hints": "這題沒有提示。",
        "no_more_hints": "沒有更多提示了。",
        "solution_heading": "參考解答",
        "solution_unavailable": "找不到參考解答的原始碼。",
        "summary": "{id}：{passed}/{total} 項測試通過",
        "summary_not_attempted": "{id}：尚未作答（0/{total} 項測試）",
        "summary_deferred": "{id}：另行評分",
        "checking": "檢查中……",
        "attempt": "第 {n} 次檢查",
        "structure_array": "陣列",
        "path_first_item": "第 {n} 個回傳值",
        "path_first_key": "回傳的 {key} 項",
        "path_item": "{whole}的第 {n} 項",
        "path_key": "{whole}的 {key} 項",
        "at_path": "{where}：{problem}",
        "label_sep": "：",
        "all_passed": "全部測試通過。",
        "ok": "{test}：通過",
        "failed": "{test}：{problem}",
        "expected_got": "預期 {expected}，得到 {got}",
        "not_attempted": "尚未作答（函式仍然拋出 NotImplementedError）",
        "missing_function": "找不到名為 `{name}` 的函式",
        "not_callable": "`{name}` 是 {type}，不是函式",
        "raised": "拋出 {error}",
        "raised_under": "在 {transform} 之下拋出 {error}",
        "jit_advice": "程式在 JAX 只有追蹤值（tracer）的地方需要具體數值："
        "請改用 jnp 函式與 jnp.where，"
        "不要對陣列使用 NumPy、Python 的 if、int() 或 float()",
        "tracer_leak": "有 JAX tracer 逃出了轉換"
        "（是否把 jit/grad/vmap 內算出的值存進全域變數？）",
        "timeout": "未在 {seconds:g} 秒內完成（無窮迴圈，或是太慢？）",
        "skipped_after_timeout": "略過：先前的測試已超時",
        "returned_none": "回傳了 None：是不是忘了 `return`？",
        "returned_type": "回傳了 {type}，預期是 {expected}",
        "returned_tracer": "回傳了逃出轉換的 JAX tracer",
        "wrong_structure": "結構錯誤：預期 {expected}，得到 {got}",
        "wrong_shape": "形狀錯誤：預期 {expected}，得到 {got}",
        "wrong_dtype": "資料型別錯誤：預期 {expected}，得到 {got}",
        "wrong_kind": "資料型別錯誤：預期{expected}型別，得到 {got}",
        "has_nan": "結果的 {size} 個元素中有 {count} 個是 NaN",
        "wrong_values": "數值錯誤：預期 {expected}，得到 {got}（最大差異 {diff:.3g}，"
        "位於索引 {index}）",
        "wrong_values_large": "{size} 個元素中有 {count} 個數值錯誤"
        "（最大差異 {diff:.3g}，"
        "位於索引 {index}：預期 {expected:.4g}，得到 {got:.4g}）",
        "mutated_input": "直接修改了輸入（第 {arg} 個引數）；請回傳新的值",
        "transposed": "兩個軸似乎對調了",
        "not_vectorized": "追蹤出的程式隨批次變大（{n_small} 筆時 {small} 個運算，"
        "{n_large} 筆時 {large} 個）：是不是用 Python 迴圈逐筆處理？"
        "請改用陣列運算或 jax.vmap",
        "printed": "（已隱藏其輸出的 {chars} 個字元）",
        "array": "陣列",
        "float_kind": "浮點數",
        "int_kind": "整數",
        "under_jit": "jax.jit",
        "under_grad": "jax.grad",
        "under_vmap": "jax.vmap",
        "under_trace": "jax.make_jaxpr",
        "grading_timeout": "筆記本執行超過 {seconds:g} 秒的時間限制",
        "grading_crash": "筆記本的行程終止了（{how}）",
        "grading_unreadable": "無法讀取結果（{why}）",
        "grading_cell_errors": "出錯的儲存格：{cells}",
        "kernel_gone": "核心（kernel）已重新啟動：請重新執行上面的儲存格。",
        "explorer": "探索器",
        "clear": "清除",
        "batch_size": "批次大小",
        "sgd_step": "SGD 步數",
        "synthetic_data": "合成資料",
        "lr_learning_rate": "學習率",
        "lr_training_loss": "訓練損失",
        "lr_title": "{dataset}：{train:,} 張訓練影像，在 {test:,} 張測試影像上量準確率",
        "lr_run": "學習率={lr:.3g}，批次={batch}：測試準確率 {accuracy:.2f}",
        "lr_text": "學習率探索器：每次訓練 {steps} 步 SGD；移動滑桿即重新訓練。",
        "loader_per_sample": "逐筆轉換 + numpy_collate",
        "loader_batched": "整批陣列 + BatchSampler",
        "loader_rate": "每秒筆數",
        "loader_title": "{dataset}：前 {n:,} 張訓練影像",
        "loader_timing": "批次大小 {batch}：逐筆每秒 {per_sample:,.0f} 筆，整批每秒 "
        "{batched:,.0f} 筆（{speedup:.0f} 倍）",
        "loader_text": "載入器探索器：每次量測讀取 {n} 筆；"
        "移動滑桿以量測另一個批次大小。",
        "elbo_samples": "每步樣本數",
        "elbo_step_size": "步長",
        "elbo_estimate": "ELBO（蒙地卡羅估計）",
        "elbo_mean": "平均 ± 2σ",
        "elbo_true_beta": "真實 β",
        "elbo_coefficient": "係數 j",
        "elbo_title": "本章的資料：{points} 個模擬資料點，{features} 個特徵",
        "elbo_fit": "每步 {samples} 個樣本，步長 {step:.3g}：最終 ELBO ≈ {elbo:.1f}",
        "elbo_text": "ELBO 探索器：每次擬合 {steps} 步 SGD；移動滑桿即重新擬合。",
        "sharding_mesh": "網格（a×b）",
        "sharding_rows": "P( 第 0 維：",
        "sharding_columns": "，第 1 維：",
        "sharding_operation": "運算",
        "sharding_piece": "1 塊，形狀 {shape}，{where}",
        "sharding_pieces": "{n} 塊，形狀 {shape}，{where}",
        "sharding_one_device": "每塊在一臺裝置上",
        "sharding_copies": "每塊存放在 {copies} 臺裝置上",
        "sharding_where": "CPU {ids}：第 0 維 {rows}，第 1 維 {columns}",
        "sharding_local": "{operation}：不需通訊（每臺裝置計算自己的那塊）",
        "sharding_communicates": "{operation}：需要通訊（{collectives}）",
        "sharding_invalid": "{spec} 在這裡不是有效的配置：{error}",
        "sharding_layout": "{spec} 在 {mesh} 網格上：{layout}",
        "sharding_text": "分片探索器：選擇網格、PartitionSpec 與運算；"
        "配置與其通訊隨之更新。",
        "collective": "集體運算",
        "devices": "裝置數",
        "collective_entries": "每臺裝置的元素數",
        "collective_problem": "{name} 在 {n} 臺裝置上會把每個區塊切成 {n} 等份："
        "區塊長度必須是 {n} 的倍數，而 {length} 不是",
        "collective_head": "{name} 跨 {n} 臺裝置，每塊 {length} 個 float32（{size} "
        "位元組）",
        "collective_compiled": "編譯成：{collectives}",
        "collective_none": "沒有集體運算",
        "collective_matches": "與集體運算的 NumPy 模型一致：{answer}",
        "yes": "是",
        "no": "否",
        "collective_sends": "每臺裝置約送出 {sent} 位元組（{blocks:g} 塊，環狀演算法）",
        "collective_device": "裝置 {d}：{before} -> {after}",
        "collective_more": "，…（共 {n} 個）",
        "collective_text": "集體運算探索器：選擇集體運算、裝置數與每臺裝置的元素數；"
        "每臺裝置前後的區塊、編譯出的集體運算與送出的位元組隨之更新。",
        "split_processes": "行程數",
        "split_devices": "每個行程的裝置數",
        "split_batch": "全域批次",
        "split_problem": "{batch} 筆無法平均分給 {devices} 臺裝置（{processes} 個行程 "
        "× {per_process}）：jax.make_array_from_process_local_data 會拒絕這個批次。"
        "請用 {devices} 的倍數：減到 {lower} 筆，或補到 {upper} "
        "筆（並遮罩補上的那幾筆）。",
        "split_head_process": "行程",
        "split_head_loads": "載入",
        "split_head_device": "本地裝置",
        "split_head_position": "網格位置",
        "split_head_holds": "持有的筆",
        "split_rows": "第 {start}:{stop} 筆",
        "split_summary": "每個行程載入 {per_process} 筆；每臺裝置持有 {per_device} "
        "筆。",
        "split_legend": "行程 {p}",
        "split_xlabel": "全域批次的第幾筆（共 {batch} 筆）",
        "split_text": "批次切分探索器：選擇行程數、每個行程的裝置數與全域批次大小；"
        "每臺裝置持有的筆數隨之更新。",
        "dp_name": "資料平行探索器",
        "dp_devices": "裝置數",
        "dp_per_device": "每臺裝置的批次",
        "dp_collective": "集體運算",
        "dp_axes_both": "psum(x, (\"i\", \"j\"))：跨兩個軸",
        "dp_axes_j": "psum(x, \"j\")：只跨每臺裝置內",
        "dp_axes_i": "psum(x, \"i\")：只跨裝置之間",
        "dp_axes_none": "不用 psum（x / x）",
        "dp_device_k": "裝置 {k}",
        "dp_xlabel": "每臺裝置上的第幾筆（vmap 的軸 \"j\"）",
        "dp_title": "正規化之後的值：全部的總和 = {total}",
        "dp_no_sum": "不求和",
        "dp_psum_over": "psum 跨 {axes}",
        "dp_more": "，…",
        "dp_summary": "<b>全域批次</b> = {d} 臺裝置 × 每臺 {b} 筆 = {n} 筆<br><b>"
        "切給裝置後的影像</b>：({n}, 28, 28) → {images}；每臺裝置拿到 {shard}<br><b>"
        "{axes}</b>：每臺裝置上的總和 [{sums}]，全部的總和 {total}（結果分布在 {on} "
        "臺裝置上）",
        "dp_text": "資料平行探索器：改變裝置數、每臺裝置的批次或 psum 的軸，"
        "看全域批次、每臺裝置的形狀與總和。",
        "grading_empty": "檔案是空的",
        "grading_not_json": "檔案不是 JSON（{why}）",
        "grading_not_notebook": "檔案是 JSON 但不是筆記本（{why}）",
        "grading_exited": "筆記本在檢查之前自行結束了行程（{how}）",
        "grading_oom": "記憶體不足（上限 {mb} MB）{where}",
        "grading_oom_cells": "，出錯的儲存格：{cells}",
        "grading_tamper_write": "它試圖修改課程的檔案（{path}）：零分",
        "grading_tamper_read": "它試圖讀取自己目錄以外的內容（{path}）：零分",
        "grading_tamper_changed": "它執行時課程的檔案被修改了（{files}），已還原：零分",
        "grading_feedback_title": "回饋：{name}",
        "grading_status": "狀態：{status}",
        "grading_score": "分數：{total:g} / {count}",
        "grading_exercise": "{id}：{score:.0%}",
    },
    "zh-Hans": {
        # Generated from "zh-Hant" by python -m jaxcourse.zh_hans (OpenCC tw2sp and
        # book/glossary_zh_terms.tsv), then read; tests/test_zh_hans.py keeps it so.
        "check": "检查",
        "hint": "提示",
        "show_solution": "显示解答",
        "hide_solution": "隐藏解答",
        "hint_n": "提示 {n}／{total}",
        "no_hints": "这题没有提示。",
        "no_more_hints": "没有更多提示了。",
        "solution_heading": "参考解答",
        "solution_unavailable": "找不到参考解答的源代码。",
        "summary": "{id}：{passed}/{total} 项测试通过",
        "summary_not_attempted": "{id}：尚未作答（0/{total} 项测试）",
        "summary_deferred": "{id}：另行评分",
        "checking": "检查中……",
        "attempt": "第 {n} 次检查",
        "structure_array": "数组",
        "path_first_item": "第 {n} 个返回值",
        "path_first_key": "返回的 {key} 项",
        "path_item": "{whole}的第 {n} 项",
        "path_key": "{whole}的 {key} 项",
        "at_path": "{where}：{problem}",
        "label_sep": "：",
        "all_passed": "全部测试通过。",
        "ok": "{test}：通过",
        "failed": "{test}：{problem}",
        "expected_got": "预期 {expected}，得到 {got}",
        "not_attempted": "尚未作答（函数仍然抛出 NotImplementedError）",
        "missing_function": "找不到名为 `{name}` 的函数",
        "not_callable": "`{name}` 是 {type}，不是函数",
        "raised": "抛出 {error}",
        "raised_under": "在 {transform} 之下抛出 {error}",
        "jit_advice": "程序在 JAX 只有追踪值（tracer）的地方需要具体数值："
        "请改用 jnp 函数与 jnp.where，"
        "不要对数组使用 NumPy、Python 的 if、int() 或 float()",
        "tracer_leak": "有 JAX tracer 逃出了转换"
        "（是否把 jit/grad/vmap 内算出的值存进全局变量？）",
        "timeout": "未在 {seconds:g} 秒内完成（无限循环，或是太慢？）",
        "skipped_after_timeout": "略过：先前的测试已超时",
        "returned_none": "返回了 None：是不是忘了 `return`？",
        "returned_type": "返回了 {type}，预期是 {expected}",
        "returned_tracer": "返回了逃出转换的 JAX tracer",
        "wrong_structure": "结构错误：预期 {expected}，得到 {got}",
        "wrong_shape": "形状错误：预期 {expected}，得到 {got}",
        "wrong_dtype": "数据类型错误：预期 {expected}，得到 {got}",
        "wrong_kind": "数据类型错误：预期{expected}类型，得到 {got}",
        "has_nan": "结果的 {size} 个元素中有 {count} 个是 NaN",
        "wrong_values": "数值错误：预期 {expected}，得到 {got}（最大差异 {diff:.3g}，"
        "位于索引 {index}）",
        "wrong_values_large": "{size} 个元素中有 {count} 个数值错误"
        "（最大差异 {diff:.3g}，"
        "位于索引 {index}：预期 {expected:.4g}，得到 {got:.4g}）",
        "mutated_input": "直接修改了输入（第 {arg} 个参数）；请返回新的值",
        "transposed": "两个轴似乎对调了",
        "not_vectorized": "追踪出的程序随批次变大（{n_small} 条时 {small} 个运算，"
        "{n_large} 条时 {large} 个）：是不是用 Python 循环逐条处理？"
        "请改用数组运算或 jax.vmap",
        "printed": "（已隐藏其输出的 {chars} 个字符）",
        "array": "数组",
        "float_kind": "浮点数",
        "int_kind": "整数",
        "under_jit": "jax.jit",
        "under_grad": "jax.grad",
        "under_vmap": "jax.vmap",
        "under_trace": "jax.make_jaxpr",
        "grading_timeout": "笔记本运行超过 {seconds:g} 秒的时间限制",
        "grading_crash": "笔记本的进程终止了（{how}）",
        "grading_unreadable": "无法读取结果（{why}）",
        "grading_cell_errors": "出错的单元格：{cells}",
        "kernel_gone": "内核（kernel）已重新启动：请重新运行上面的单元格。",
        "explorer": "探索器",
        "clear": "清除",
        "batch_size": "批次大小",
        "sgd_step": "SGD 步数",
        "synthetic_data": "合成数据",
        "lr_learning_rate": "学习率",
        "lr_training_loss": "训练损失",
        "lr_title": "{dataset}：{train:,} 张训练图像，在 {test:,} 张测试图像上量准确率",
        "lr_run": "学习率={lr:.3g}，批次={batch}：测试准确率 {accuracy:.2f}",
        "lr_text": "学习率探索器：每次训练 {steps} 步 SGD；移动滑杆即重新训练。",
        "loader_per_sample": "逐条转换 + numpy_collate",
        "loader_batched": "整批数组 + BatchSampler",
        "loader_rate": "每秒条数",
        "loader_title": "{dataset}：前 {n:,} 张训练图像",
        "loader_timing": "批次大小 {batch}：逐条每秒 {per_sample:,.0f} 条，整批每秒 "
        "{batched:,.0f} 条（{speedup:.0f} 倍）",
        "loader_text": "加载器探索器：每次量测读取 {n} 条；"
        "移动滑杆以量测另一个批次大小。",
        "elbo_samples": "每步样本数",
        "elbo_step_size": "步长",
        "elbo_estimate": "ELBO（蒙地卡罗估计）",
        "elbo_mean": "平均 ± 2σ",
        "elbo_true_beta": "真实 β",
        "elbo_coefficient": "系数 j",
        "elbo_title": "本章的数据：{points} 个模拟数据点，{features} 个特征",
        "elbo_fit": "每步 {samples} 个样本，步长 {step:.3g}：最终 ELBO ≈ {elbo:.1f}",
        "elbo_text": "ELBO 探索器：每次拟合 {steps} 步 SGD；移动滑杆即重新拟合。",
        "sharding_mesh": "网格（a×b）",
        "sharding_rows": "P( 第 0 维：",
        "sharding_columns": "，第 1 维：",
        "sharding_operation": "运算",
        "sharding_piece": "1 块，形状 {shape}，{where}",
        "sharding_pieces": "{n} 块，形状 {shape}，{where}",
        "sharding_one_device": "每块在一台设备上",
        "sharding_copies": "每块存放在 {copies} 台设备上",
        "sharding_where": "CPU {ids}：第 0 维 {rows}，第 1 维 {columns}",
        "sharding_local": "{operation}：不需通信（每台设备计算自己的那块）",
        "sharding_communicates": "{operation}：需要通信（{collectives}）",
        "sharding_invalid": "{spec} 在这里不是有效的配置：{error}",
        "sharding_layout": "{spec} 在 {mesh} 网格上：{layout}",
        "sharding_text": "分片探索器：选择网格、PartitionSpec 与运算；"
        "配置与其通信随之更新。",
        "collective": "集体运算",
        "devices": "设备数",
        "collective_entries": "每台设备的元素数",
        "collective_problem": "{name} 在 {n} 台设备上会把每个区块切成 {n} 等份："
        "区块长度必须是 {n} 的倍数，而 {length} 不是",
        "collective_head": "{name} 跨 {n} 台设备，每块 {length} 个 float32（{size} "
        "字节）",
        "collective_compiled": "编译成：{collectives}",
        "collective_none": "没有集体运算",
        "collective_matches": "与集体运算的 NumPy 模型一致：{answer}",
        "yes": "是",
        "no": "否",
        "collective_sends": "每台设备约送出 {sent} 字节（{blocks:g} 块，环状算法）",
        "collective_device": "设备 {d}：{before} -> {after}",
        "collective_more": "，…（共 {n} 个）",
        "collective_text": "集体运算探索器：选择集体运算、设备数与每台设备的元素数；"
        "每台设备前后的区块、编译出的集体运算与送出的字节随之更新。",
        "split_processes": "进程数",
        "split_devices": "每个进程的设备数",
        "split_batch": "全局批次",
        "split_problem": "{batch} 条无法平均分给 {devices} 台设备（{processes} 个进程 "
        "× {per_process}）：jax.make_array_from_process_local_data 会拒绝这个批次。"
        "请用 {devices} 的倍数：减到 {lower} 条，或补到 {upper} "
        "条（并遮罩补上的那几条）。",
        "split_head_process": "进程",
        "split_head_loads": "加载",
        "split_head_device": "本地设备",
        "split_head_position": "网格位置",
        "split_head_holds": "持有的条",
        "split_rows": "第 {start}:{stop} 条",
        "split_summary": "每个进程加载 {per_process} 条；每台设备持有 {per_device} "
        "条。",
        "split_legend": "进程 {p}",
        "split_xlabel": "全局批次的第几条（共 {batch} 条）",
        "split_text": "批次切分探索器：选择进程数、每个进程的设备数与全局批次大小；"
        "每台设备持有的条数随之更新。",
        "dp_name": "数据并行探索器",
        "dp_devices": "设备数",
        "dp_per_device": "每台设备的批次",
        "dp_collective": "集体运算",
        "dp_axes_both": "psum(x, (\"i\", \"j\"))：跨两个轴",
        "dp_axes_j": "psum(x, \"j\")：只跨每台设备内",
        "dp_axes_i": "psum(x, \"i\")：只跨设备之间",
        "dp_axes_none": "不用 psum（x / x）",
        "dp_device_k": "设备 {k}",
        "dp_xlabel": "每台设备上的第几条（vmap 的轴 \"j\"）",
        "dp_title": "归一化之后的值：全部的总和 = {total}",
        "dp_no_sum": "不求和",
        "dp_psum_over": "psum 跨 {axes}",
        "dp_more": "，…",
        "dp_summary": "<b>全局批次</b> = {d} 台设备 × 每台 {b} 条 = {n} 条<br><b>"
        "切给设备后的图像</b>：({n}, 28, 28) → {images}；每台设备拿到 {shard}<br><b>"
        "{axes}</b>：每台设备上的总和 [{sums}]，全部的总和 {total}（结果分布在 {on} "
        "台设备上）",
        "dp_text": "数据并行探索器：改变设备数、每台设备的批次或 psum 的轴，"
        "看全局批次、每台设备的形状与总和。",
        "grading_empty": "文件是空的",
        "grading_not_json": "文件不是 JSON（{why}）",
        "grading_not_notebook": "文件是 JSON 但不是笔记本（{why}）",
        "grading_exited": "笔记本在检查之前自行结束了进程（{how}）",
        "grading_oom": "内存不足（上限 {mb} MB）{where}",
        "grading_oom_cells": "，出错的单元格：{cells}",
        "grading_tamper_write": "它试图修改课程的文件（{path}）：零分",
        "grading_tamper_read": "它试图读取自己目录以外的内容（{path}）：零分",
        "grading_tamper_changed": "它运行时课程的文件被修改了（{files}），已还原：零分",
        "grading_feedback_title": "反馈：{name}",
        "grading_status": "状态：{status}",
        "grading_score": "分数：{total:g} / {count}",
        "grading_exercise": "{id}：{score:.0%}",
    },
}


def message(key: str, language: str = "en", /, **values: object) -> str:
    """Return the catalogue's text for ``key`` in ``language``, formatted.

    Parameters
    ----------
    key : str
        A key of :data:`MESSAGES` (e.g. ``"check"``).
    language : {"en", "zh-Hant", "zh-Hans"}
        The language; a key this language lacks falls back to English.
    **values
        Fields substituted into the text.

    Returns
    -------
    str
        The formatted message.
    """
    if language not in MESSAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, not {language!r}")
    text = MESSAGES[language].get(key, MESSAGES["en"][key])
    return text.format(**values) if values else text


#: What common exceptions mean, for learners who read Chinese: the name stays
#: (it is what Python prints and what a search finds), the gloss follows it.
#: The Simplified texts are derived from the Traditional ones like MESSAGES'.
EXCEPTIONS: dict[str, dict[str, str]] = {
    "zh-Hant": {
        "TypeError": "型別錯誤",
        "ValueError": "值不合要求",
        "IndexError": "索引超出範圍",
        "KeyError": "找不到這個鍵",
        "NameError": "名稱未定義",
        "AttributeError": "沒有這個屬性",
        "ZeroDivisionError": "除以零",
        "NotImplementedError": "尚未實作",
        "RuntimeError": "執行時錯誤",
        "AssertionError": "斷言不成立",
        "MemoryError": "記憶體不足",
        "RecursionError": "遞迴太深",
        "OverflowError": "數值溢位",
        "UnboundLocalError": "區域變數在賦值前被使用",
        "SyntaxError": "語法錯誤",
        "ConcretizationTypeError": "追蹤時需要具體的值",
        "TracerBoolConversionError": "追蹤中的值不能轉成 bool",
        "TracerIntegerConversionError": "追蹤中的值不能轉成整數",
        "TracerArrayConversionError": "追蹤中的值不能轉成 NumPy 陣列",
        "UnexpectedTracerError": "追蹤中的值洩漏到函式之外",
        "ShardingTypeError": "分片型別錯誤",
    },
    "zh-Hans": {
        "TypeError": "类型错误",
        "ValueError": "值不合要求",
        "IndexError": "索引超出范围",
        "KeyError": "找不到这个键",
        "NameError": "名称未定义",
        "AttributeError": "没有这个属性",
        "ZeroDivisionError": "除以零",
        "NotImplementedError": "尚未实现",
        "RuntimeError": "运行时错误",
        "AssertionError": "断言不成立",
        "MemoryError": "内存不足",
        "RecursionError": "递归太深",
        "OverflowError": "数值溢出",
        "UnboundLocalError": "局部变量在赋值前被使用",
        "SyntaxError": "语法错误",
        "ConcretizationTypeError": "追踪时需要具体的值",
        "TracerBoolConversionError": "追踪中的值不能转成 bool",
        "TracerIntegerConversionError": "追踪中的值不能转成整数",
        "TracerArrayConversionError": "追踪中的值不能转成 NumPy 数组",
        "UnexpectedTracerError": "追踪中的值泄漏到函数之外",
        "ShardingTypeError": "分片类型错误",
    },
}


def explain_error(error: str, language: str = "en") -> str:
    """Return ``error`` ("TypeError: ...") with its name explained in ``language``.

    English text is returned as it is; in Chinese a known exception name gets
    its meaning in brackets, e.g. "TypeError（型別錯誤）：...".
    """
    name, sep, rest = error.partition(":")
    gloss = EXCEPTIONS.get(language, {}).get(name.strip())
    if gloss is None:
        return error
    return f"{name.strip()}（{gloss}）" + (f"：{rest.strip()}" if sep else "")


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh",
             "eighth", "ninth", "tenth")


def ordinal(n: int) -> str:
    """Return the English ordinal of ``n`` >= 1: "first", ..., "tenth", "11th"."""
    if 1 <= n <= len(_ORDINALS):
        return _ORDINALS[n - 1]
    teens = 10 <= n % 100 <= 20
    suffix = "th" if teens else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
