"""The catalogue's texts in Simplified Chinese (made by ``jaxcourse.zh_hans``)."""

TEXTS: dict[str, str] = {
    # Generated from "zh-Hant" by python -m jaxcourse.zh_hans (OpenCC tw2sp and
    # book/glossary_zh_terms.tsv), then read; tests/test_zh_hans.py keeps it so.
    "check": "检查",
    "hint": "提示",
    "show_solution": "显示解答",
    "hide_solution": "隐藏解答",
    "release_solution_note": ("在这份课堂发布版中，老师公布解答之前，"
                              "**显示解答**按钮不能使用（把鼠标移到按钮上会显示何时开放）。"),
    "hint_n": "提示 {n}／{total}",
    "no_hints": "这题没有提示。",
    "no_more_hints": "没有更多提示了。",
    "solution_heading": "参考解答",
    "solution_unavailable": "找不到参考解答的源代码。",
    "solution_withheld": "这份课堂版本不含解答。",
    "solution_from": "解答将于 {date} 开放。",
    "solution_unpublished": "解答自 {date} 开放，但老师还没有把解答加进这份课堂版本。",
    "reference_withheld": "这份课堂版本不含参考解答：检查时比对"
    "的是随附保存的参考输出，但它们在这里不适"
    "用（{why}）。请向老师索取为这个环境制作的版本。",
    "summary": "{id}：{passed}/{total} 项测试通过",
    "summary_not_attempted": "{id}：尚未作答（0/{total} 项测试）",
    "summary_deferred": "{id}：另行评分",
    "checking": "检查中……",
    "attempt": "第 {n} 次检查",
    "check_library_answer": "这就是课程自己的函数 `{name}`：请自己写出推论过程"
    "（课堂评分会把它算作借用的答案）",
    "structure_array": "数组",
    "path_first_item": "第 {n} 个返回值",
    "path_first_key": "返回的 {key} 项",
    "path_item": "{whole}的第 {n} 项",
    "path_key": "{whole}的 {key} 项",
    "at_path": "{where}：{problem}",
    "label_sep": "：",
    "all_passed": "全部测试通过。",
    "ok": "{test}：通过",
    "advice": "{test}：通过，但请注意：{problem}",
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
    "global_shape_advice": "每个进程那一块的形状必须符合全局形状分给它的那一份"
    "（它分到的条数、补齐后的长度）：你补齐的是哪一个轴？全局形状算了几条？",
    "tracer_leak": "有 JAX tracer 逃出了转换"
    "（是否把 jit/grad/vmap 内算出的值存进全局变量？）",
    "timeout": "{seconds:g} 秒内没有完成，已停止：{likely}",
    "timeout_busy": "它自己的 {seconds:g} 秒内没有完成，时钟上过了 {wall:.0f} "
    "秒时被停止（这段时间其他程序也占着 CPU 核心）：{likely}",
    "endless_loop": "是否有永不结束的循环？例如条件永远不变的 `while` 循环",
    "endless_repeat": "数据集是否永远取不完？没有给次数的 `.repeat()` "
    "会无限重复数据集，遍历它就永远不会结束",
    "endless_collective": "进程是否不同步？集体运算会一直等待已经离开的进程："
    "每个进程都必须以相同的顺序、相同的次数调用相同的集体运算",
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
    "wrong_values_one": "数值错误：预期 {expected}，得到 {got}（差异 {diff:.3g}）",
    "advice_not_counted": "建议，不计分",
    "wrong_values_large": "{size} 个元素中有 {count} 个数值错误"
    "（最大差异 {diff:.3g}，"
    "位于索引 {index}：预期 {expected:.4g}，得到 {got:.4g}）",
    "mutated_input": "直接修改了输入（第 {arg} 个参数）；请返回新的值",
    "transposed": "两个轴似乎对调了",
    # 对学习者编译后程序的测量（judging._measured）。
    "measured_collectives": "编译后的程序含有 {got}，其实 {expected} 就够了",
    "measured_bytes": "编译后的程序里每个设备发送 {got} 字节，"
    "是足够的 {expected} 字节的 {ratio} 倍",
    "measured_share": "一个设备做了 {got} 的工作，其实可以只做 {expected}",
    "count_of": "{n} 个 {name}",
    "no_collective": "没有集体运算",
    "layout_split": "数组被切成 {got}，预期是 {expected}",
    "layout_elsewhere": "切出的片段没错（{pieces}），但放在别的设备上："
    "网格轴的顺序反了吗？",
    "layout_pieces": "第 {dim} 维 {n} 块",
    "layout_whole": "一整块（每个设备都持有全部）",
    "no_shard_map": "你的函数里没有 jax.shard_map：编译器也许能算出正确的值，"
    "但这道练习要你自己写出逐设备的程序和它的集体运算",
    "shard_map_not_needed": "你的函数用了 jax.shard_map，而这里要的是编译器自己的切分",
    "not_jitted": "你返回的函数没有用 jax.jit 编译：它会逐个运算运行，"
    "而其中的切分约束只在 jit 之下才有作用",
    "jitted_not_needed": "你返回的函数用 jax.jit 编译了，而这里要的是一般的函数",
    "share_all": "全部",
    "list_joiner": "、",
    "pattern_factor": "每个值都是预期值的 {factor}：是不是该取平均的地方做"
    "了求和（或反过来），或多乘了设备数、批次大小之类的因子？",
    "pattern_factor_no_devices": "每个值都是预期值的 {factor}：是不是该取平均的"
    "地方做了求和（或反过来），或多乘了某个数量或大小？",
    "pattern_factor_one": "这个值是预期值的 {factor}",
    "cause_bits": "：是不是把比特当成了字节（1 字节是 8 比特），"
    "或在该用给定数量的地方写死了 8？",
    "cause_percent": "：是不是该用分数的地方用了百分比（没有除以 100），或反过来？",
    "wrong_choice": "预期 {expected}，得到 {got}",
    "choice_outside": "{got} 不是 {among} 中的任何一个",
    "none_as_text": "请直接返回 None，而不是看起来像它的字符串",
    "spec_dimension": "第 {dim} 维{got}，预期 {expected}",
    "spec_over": "沿 {axis} 切分",
    "spec_whole": "未切分（None）",
    "spec_none": "None（不切分）",
    "spec_rank": "规格 {spec} 有 {got} 项，但数组有 {expected} 维",
    "factor_times": "{n} 倍",
    "factor_part": "{n} 分之一",
    "factor_other": "{k:.4g} 倍",
    "pattern_negatives": "正值都对，但负值没有被设为零：是不是漏了 relu"
    "（或与 0 取最大值）？",
    "pattern_first_block": "沿第 0 轴的 {n} 个元素中，前 {k} 个正确，"
    "其余都错：是不是只算了第一个设备的那一块，或其他块没有收集回来？",
    "echoed_input": "它原封不动地返回了第 {arg} 个参数：算出的结果有返回吗？",
    # How a wrong number relates to the right one (checking.relations).
    "relation_sum_for_max": "这是取总和得到的值，而预期的是两者中较大的一个：是不是把"
                            "重叠进行的两段时间相加了（或把先后发生的两项需求相加）？",
    "relation_sum_for_min": "这是取总和得到的值，而预期的是两者中较小的一个",
    "relation_max_for_sum": "这是取两者中较大者得到的值，而预期的是两者之和：是不是把"
                            "先后发生的两部分当成重叠了？",
    "relation_rounding": "这是换一种舍入方式得到的值：预期{want}，却用了{got}",
    "rule_ceil": "向上取整（ceil）",
    "rule_floor": "无条件舍去（floor）",
    "rule_round": "四舍五入（round）",
    "relation_boundary": "边界读反了：预期 {want}，却用了 {got}，所以正好落在边界上的"
                         "值被归到了错的一边",
    "relation_off_by_one": "差了一：计数多了一个或少了一个（该用 n - 1 的地方用了 n，"
                           "或反过来）",
    "relation_ring": "漏了环的比例：{n} 个设备中每个发送 {n} 份中的 {n} - 1 份，所以"
                     "字节数是全部的 ({n} - 1)/{n}",
    "relation_part_left_out": "总和中漏了一部分",
    "relation_part_twice": "总和中有一部分算了两次",
    "relation_not_divided": "没有除以 {name}",
    "relation_not_multiplied": "没有乘以 {name}",
    "relation_multiplied_for_divided": "该除以 {name} 的地方乘以了 {name}",
    "relation_factor_left_out": "漏了一个 {k} 倍的因子",
    "relation_byte_width": "每个数用了 {got} 个字节，而预期是 {want} 个（bfloat16 每"
                           "个数 2 字节，float32 4 字节）",
    "relation_times_input": "这个值是预期值的 {n} 倍，而 {n} 正是 {name}：是不是多乘"
                            "了一次 {name}，或少除了一次？",
    "relation_over_input": "这个值是预期值的 {n} 分之一，而 {n} 正是 {name}：是不是多"
                           "除了一次 {name}，或少乘了一次？",
    "relation_gib": "单位：把 GiB（2**30 字节）和 GB（10**9 字节）弄混了",
    "relation_kib": "单位：把 1,024 和 1,000 弄混了（KiB 与 kB）",
    "relation_other_test": "这是另一项测试（{test}）的正确值：答案有没有用到这项测试"
                           "的每个输入，还是返回了只适合范例的值？",
    "relation_one_more": "比预期值多一：边界是不是算反了（< 与 <=、ceil 与 round 或 f"
                         "loor、n 与 n - 1）？",
    "relation_one_less": "比预期值少一：边界是不是算反了（< 与 <=、ceil 与 round 或 f"
                         "loor、n 与 n - 1）？",
    "relation_plus_input": "这是预期值加上 {amount}：是不是把不属于答案的东西一起算进"
                           "去了？",
    "relation_minus_input": "这是预期值减去 {amount}：是不是漏了答案的一部分？",
    "relation_off_by_one_named": "差了一：该用 {want} 的地方用了 {got}",
    "rel_transposed": "数值都对，但转置了：两个轴对调（多写或少写了一个 .T，"
    "或乘积的两个操作数顺序反了？）",
    "rel_unit_axis_extra": "数值都对，但多了一个长度为 1 的轴：多了一次 reshape、"
    "[:, None] 或 keepdims=True？",
    "rel_unit_axis_missing": "数值都对，但少了长度为 1 的那个轴：多了一次 squeeze "
    "或索引？",
    "rel_reshaped": "数值和顺序都对，但形状是 {got}：reshape 成错的形状了？",
    "rel_reduced_all": "这是所有预期值的{op}：该逐项给值的地方只给了一个数"
    "（沿每个轴都归约了）",
    "rel_reduced": "这是预期值沿第 {axes} 轴的{op}：沿一个该保留的轴归约了",
    "rel_not_reduced": "你的值沿第 {axes} 轴取{op}才是预期值：少了这一步{op}",
    "rel_first_part": "这是沿第 {axis} 轴预期的 {n} 个中的前 {m} 个：后面 {rest} "
    "个漏掉了（最后较小的那一份被丢掉了？）",
    "rel_last_part": "这是沿第 {axis} 轴预期的 {n} 个中的后 {m} 个：前面 {rest} "
    "个漏掉了",
    "rel_more_after": "沿第 {axis} 轴，你的前 {n} 个就是预期值，后面又多了 {rest} 个",
    "rel_more_before": "沿第 {axis} 轴，你的后 {n} 个就是预期值，前面多了 {rest} 个",
    "rel_repeated": "这是预期值沿第 {axis} 轴并排重复了 {k} 次：只要一份的地方"
    "放了好几份",
    "rel_axis_times": "第 {axis} 轴有 {got} 个元素，预期 {expected} 个：是 {k} 倍",
    "rel_axis_part": "第 {axis} 轴有 {got} 个元素，预期 {expected} 个：只有 {k} "
    "分之一",
    "rel_same_slices": "沿第 0 轴的 {n} 个切片全都一样，预期的却各不相同："
    "同一份值（例如同一次抽出的随机数）被重复用了？",
    "rel_reversed": "数值都对，但沿第 {axis} 轴顺序反了",
    "rel_sorted": "数值都对，但被排序了：预期的顺序不见了",
    "rel_rows_reordered": "沿第 0 轴的各个切片都对，但顺序不同：被打乱了，"
    "或按别的东西排序了？",
    "rel_within_rows": "沿第 0 轴的每个切片都有它该有的值，但顺序不同",
    "rel_reordered": "数值都对，但顺序不同",
    "rel_truncated": "预期是小数，得到的却是整数：每个都是预期值去掉小数部分"
    "（用了整数除法 //，或转成了 int？）",
    "rel_float_for_int": "整数值都对，但类型是 {got}，预期 {expected}：除法 / "
    "或某次转换改了类型",
    "rel_other_float": "数值都对，但类型是 {got}，预期 {expected}：转成了别的精度？",
    "rel_extra_items": "预期值是你返回的 {count} 项中的第 {n} 项：只返回它就好",
    "rel_only_part": "这只是预期值 {structure} 的{part}：要返回整个值",
    "rel_items_more": "有 {got} 项，预期 {expected} 项：前 {expected} 项都对，"
    "后面又多了 {extra} 项",
    "rel_items_more_empty": "有 {got} 项，预期 {expected} 项：前 {expected} 项都对，"
    "最后一项是空的",
    "rel_items_fewer": "预期 {expected} 项，只有 {got} 项，每项都对：最后 {missing} "
    "项不见了",
    "rel_unstacked": "这是 {n} 棵树的列表，预期的是一棵树，它的每个数组沿新的第一个"
    "轴放着这 {n} 份：要逐叶用 jnp.stack 合起来",
    "spec_swapped": "网格轴放到了彼此的维度上：预期 {expected}，得到 {got}",
    "op_sum": "总和",
    "op_mean": "平均",
    "op_max": "最大值",
    "op_min": "最小值",
    "err_axis_not_in_mesh": "规格用了网格轴 {axis}，但这个测试的网格没有这个轴"
    "（它的轴是 {axes}）：轴名要从给你的网格取，别照抄范例",
    "err_unbound_axis": "集体运算用了轴 {axis}，但外层没有任何东西绑定它："
    "在 shard_map 里用网格的轴名，在 vmap 或 pmap 里用传给它的 axis_name",
    "err_vmap_sizes": "vmap 映射的几个参数，被映射的轴长度不一样：每个样本共用的"
    "参数在 in_axes 里要给 None，或者映射的轴不是批次的轴",
    "err_vmap_rank": "vmap 要映射一个没有第 {axis} 轴的参数（一个数？）："
    "在 in_axes 里给它 None；关键字参数一定会被映射，所以共用的参数要按位置传，"
    "或在闭包里取用",
    "err_reshape": "要求的形状 {shape} 装不下现有的 {size} 个值：是不是写死了一个"
    "大小，或用错了量去算？大小要从输入的形状取",
    "err_truth_value": "对数组用了 Python 的 if、and、or 或连续比较，但数组的每个"
    "元素各有一个真假值：改用 jnp.where、jnp.maximum 或其他数组运算",
    "err_index_by_name": "用名字去索引一个 {kind}：这些项是 {kind}，要按位置取，"
    "不是 dict",
    "err_block_and_whole": "大小 {small} 碰上了大小 {large} = {k} × {small}："
    "一个操作数是一个设备的那一块，另一个是分在 {k} 个设备上的整个数组；"
    "两者的规格（或切分所沿的轴）不一样",
    "err_contracting": "乘积沿大小 {a} 和 {b} 的两个轴求和，这两个大小必须一致："
    "操作数的轴不是预期的那些（少了转置，或映射、切分错了轴？）",
    "err_tracer_sharding": "在 jit 里读不到数组的 .sharding："
    "jax.typeof(x).sharding 才能给出它的布局",
    "err_not_divisible": "规格把某个参数的轴切给一组设备，但轴长不能被设备数整除："
    "网格轴放错了维度，或两个轴对调了？",
    "err_out_replication": "out_specs 里少了一个网格轴，这表示结果在那个轴的每个"
    "设备上都一样，但没有任何运算让它一样：先沿那个轴归约（psum），"
    "或在 out_specs 里写出这个轴",
    "err_ring_count": "环的配对用到了 {named} 个设备，但这个轴只有 {devices} 台："
    "要从轴的大小（jax.lax.axis_size）建出配对，别写死数字",
    "err_scatter_untiled": "psum_scatter 不加 tiled=True 时，要分散的轴必须刚好有 "
    "{count} 个元素，每个设备一个；tiled=True 才会把长度 {size} 的轴切成几块",
    "err_concatenate_numbers": "concatenate 沿数组已有的轴接起来，但这些都是单一"
    "的数：要用 np.stack 叠起来，做出一个新轴",
    "err_stack_shapes": "要叠起来的数组形状不一样：把不同种类的部分（图像和标签？）"
    "叠在一起了，每一种要各自叠",
    "err_ragged": "用形状不同的项或嵌套序列建数组：这些项不是一个样（要先把"
    "成对的项拆开？）",
    "err_partial_batch": "批次只有 {got} 条，每一步却要 {size} 条：步数还没跑完，"
    "数据就用完了（步数比完整批次多：次数进位了，或不是每个进程中最小的那个？）",
    "err_host_rows": "这个进程沿第 {dim} 维有 {has} 条，全局形状 {shape} 却分给它 "
    "{addr} 条：全局形状是所有进程的数据合起来（自己的条数乘以进程数），不多也不少",
    "reduced_axis": "形状是某个输入沿第 {got} 轴归约后的形状，"
    "预期是沿第 {expected} 轴：轴选错了吗？",
    "array_for_number": "预期一个数，却得到一个数组："
    "是不是漏了求和、平均或 .item()？",
    "bool_for_number": "预期一个数，却得到 True/False："
    "是不是做了比较，而不是计数或取值？",
    "pattern_negated": "每个值的正负号都相反：是不是相减的顺序反了？",
    "pattern_offset": "每个值都差了同样的量（{offset:.4g}）：是不是多加"
    "了一个常数，或漏加了？",
    "pattern_offset_axis": "沿第 {axis} 轴的每一片都差了同一组值：是不是多加或漏"
    "加了偏置、平均值或位置参数之类的一项？",
    "pattern_rolled": "这是预期值沿第 {axis} 轴移动了 {shift} 格的"
    "结果（或往另一个方向移动 {back} 格）：是不是在环上移"
    "错了方向，或移太多格？",
    "not_vectorized": "追踪出的程序随批次变大（{n_small} 条时 {small} 个运算，"
    "{n_large} 条时 {large} 个）：是不是用 Python 循环逐条处理？"
    "请改用数组运算或 jax.vmap",
    "scanned_examples": "追踪出的程序对 {n} 个样本逐一扫描（lax.map 或长度等于批次"
    "的 scan）：样本是一个接一个算的，不是成批计算；改用 jax.vmap 或数组运算",
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
    "grading_cell_error": "第 {cell} 个代码单元格引发了 {error}",
    "kernel_gone": "内核（kernel）已重新启动：请重新运行上面的单元格。",
    "explorer": "探索器",
    "explorer_static": "这是探索器的静态画面：在这个网页上，控件不会带动任何"
                       "计算。要试用它，请把本章当作笔记本打开（页面顶端的火箭"
                       "按钮：Binder 或 Colab），再运行它的单元格。",
    "clear": "清除",
    "batch_size": "批次大小",
    "sgd_step": "SGD 步数",
    "synthetic_data": "合成数据",
    "lr_learning_rate": "学习率",
    "lr_training_loss": "训练损失",
    "lr_title": "{dataset}：{train:,} 张训练图像，在 {test:,} 张测试图像上量准确率",
    "lr_run": "学习率={lr:.3g}，批次={batch}：测试准确率 {accuracy:.2f}",
    "lr_text": "学习率探索器：每次训练 {steps} 步 SGD；移动滑块即重新训练。",
    "loader_per_sample": "逐条转换 + numpy_collate",
    "loader_batched": "整批数组 + BatchSampler",
    "loader_rate": "每秒条数",
    "loader_title": "{dataset}：前 {n:,} 张训练图像",
    "loader_timing": "批次大小 {batch}：逐条每秒 {per_sample:,.0f} 条，整批每秒 "
    "{batched:,.0f} 条（{speedup:.0f} 倍）",
    "loader_text": "加载器探索器：每次测量读取 {n} 条；"
    "移动滑块以测量另一个批次大小。",
    "elbo_samples": "每步样本数",
    "elbo_step_size": "步长",
    "elbo_estimate": "ELBO（蒙特卡罗估计）",
    "elbo_mean": "平均 ± 2σ",
    "elbo_true_beta": "真实 β",
    "elbo_coefficient": "系数 j",
    "elbo_title": "本章的数据：{points} 个模拟数据点，{features} 个特征",
    "elbo_fit": "每步 {samples} 个样本，步长 {step:.3g}：最终 ELBO ≈ {elbo:.1f}",
    "elbo_text": "ELBO 探索器：每次拟合 {steps} 步 SGD；移动滑块即重新拟合。",
    "sharding_mesh": "网格（a×b）",
    "sharding_rows": "P( 第 0 维：",
    "sharding_columns": "，第 1 维：",
    "sharding_operation": "运算",
    "sharding_piece": "1 块，形状 {shape}，{where}",
    "sharding_pieces": "{n} 块，形状 {shape}，{where}",
    "sharding_one_device": "每块在一个设备上",
    "sharding_copies": "每块存放在 {copies} 个设备上",
    "sharding_where": "CPU {ids}：第 0 维 {rows}，第 1 维 {columns}",
    "sharding_local": "{operation}：不需通信（每个设备计算自己的那块）",
    "sharding_communicates": "{operation}：需要通信（{collectives}）",
    "sharding_invalid": "{spec} 在这里不是有效的布局：{error}",
    "sharding_layout": "{spec} 在 {mesh} 网格上：{layout}",
    "sharding_text": "分片探索器：选择网格、PartitionSpec 与运算；"
    "布局与其通信随之更新。",
    "collective": "集体运算",
    "devices": "设备数",
    "collective_entries": "每个设备的元素数",
    "collective_problem": "{name} 在 {n} 个设备上会把每一块切成 {n} 等份："
    "块长度必须是 {n} 的倍数，而 {length} 不是",
    "collective_head": "{name} 跨 {n} 个设备，每块 {length} 个 float32（{size} "
    "字节）",
    "collective_compiled": "编译成：{collectives}",
    "collective_none": "没有集体运算",
    "collective_matches": "与集体运算的 NumPy 模型一致：{answer}",
    "yes": "是",
    "no": "否",
    "collective_sends": "每个设备约发送 {sent} 字节（{blocks:g} 块，单向环）",
    "collective_device": "设备 {d}：{before} -> {after}",
    "collective_more": "，…（共 {n} 个）",
    "collective_text": "集体运算探索器：选择集体运算、设备数与每个设备的元素数；"
    "每个设备前后的块、编译出的集体运算与发送的字节随之更新。",
    "split_processes": "进程数",
    "split_devices": "每个进程的设备数",
    "split_batch": "全局批次",
    "split_problem": "{batch} 条无法平均分给 {devices} 个设备（{processes} 个进程 "
    "× {per_process}）：jax.make_array_from_process_local_data 会拒绝这个批次。"
    "请用 {devices} 的倍数：减到 {lower} 条，或补到 {upper} "
    "条（并用掩码遮住补上的那几条）。",
    "split_head_process": "进程",
    "split_head_loads": "加载",
    "split_head_device": "本地设备",
    "split_head_position": "网格位置",
    "split_head_holds": "持有的条",
    "split_rows": "第 {start}:{stop} 条",
    "split_summary": "每个进程加载 {per_process} 条；每个设备持有 {per_device} "
    "条。",
    "split_legend": "进程 {p}",
    "split_xlabel": "全局批次的第几条（共 {batch} 条）",
    "split_text": "批次切分探索器：选择进程数、每个进程的设备数与全局批次大小；"
    "每个设备持有的条数随之更新。",
    "dp_name": "数据并行探索器",
    "dp_devices": "设备数",
    "dp_per_device": "每个设备的批次",
    "dp_collective": "集体运算",
    "dp_axes_both": "psum(x, (\"i\", \"j\"))：跨两个轴",
    "dp_axes_j": "psum(x, \"j\")：只跨每个设备内",
    "dp_axes_i": "psum(x, \"i\")：只跨设备之间",
    "dp_axes_none": "不用 psum（x / x）",
    "dp_device_k": "设备 {k}",
    "dp_xlabel": "每个设备上的第几条（vmap 的轴 \"j\"）",
    "dp_title": "归一化之后的值：全部的总和 = {total}",
    "dp_no_sum": "不求和",
    "dp_psum_over": "psum 跨 {axes}",
    "dp_more": "，…",
    "dp_summary": "<b>全局批次</b> = {d} 个设备 × 每台 {b} 条 = {n} 条<br><b>"
    "切给设备后的图像</b>：({n}, 28, 28) → {images}；每个设备拿到 {shard}<br><b>"
    "{axes}</b>：每个设备上的总和 [{sums}]，全部的总和 {total}（结果分布在 {on} "
    "个设备上）",
    "dp_text": "数据并行探索器：改变设备数、每个设备的批次或 psum 的轴，"
    "看全局批次、每个设备的形状与总和。",
    "grading_empty": "文件是空的",
    "grading_not_json": "文件不是 JSON（{why}）",
    "grading_not_notebook": "文件是 JSON 但不是笔记本（{why}）",
    "grading_exited": "笔记本在检查之前自行结束了进程（{how}）",
    "grading_oom": "内存不足（上限 {mb} MB）{where}",
    "grading_oom_cells": "，出错的单元格：{cells}",
    "grading_tamper_write": "它试图修改课程的文件（{path}）：零分",
    "grading_tamper_read": "它试图读取自己目录以外的内容（{path}）：零分",
    "grading_folder": "评分目录",
    "grading_tamper_outside": "它试图写入自己目录以外的地方（{path}）：零分",
    "grading_tamper_changed": "它运行时课程的文件被修改了（{files}），已还原：零分",
    "grading_feedback_title": "反馈：{name}",
    "grading_status": "状态：{status}",
    "grading_score": "分数：{total:g} / {count}",
    "grading_exercise": "{id}：{score:.0%}",
    "grading_borrowed_is": "借用了参考答案：`{name}` 就是课程的 `{reference}`，"
    "不是在笔记本里写的：零分",
    "grading_borrowed_calls": "借用了参考答案：`{name}` 运行了课程的 `{reference}`："
    "零分",
    "grading_borrowed_copy": "借用了参考答案：`{name}` 是从安装的文件运行的课程 "
    "`{reference}`，不是在笔记本里写的：零分",
    "grading_borrowed_library": "借用了参考答案：`{name}` 使用了课程的 `{reference}`，"
    "它传回的就是这道练习的答案：零分",
    "grading_flag_pasted": "粘贴了参考答案",
    "grading_flag_same": "与 {others} 的答案相同",
    # 布局探索器（第 6 章）。
    "traceback_frames_1": "JAX 等函数库内部的 1 层调用",
    "traceback_frames_n": "JAX 等函数库内部的 {n} 层调用",
    "traceback_chain_1": "在它们内部先引发的 1 个异常",
    "traceback_chain_n": "在它们内部先引发的 {n} 个异常",
    "traceback_and": "，以及",
    "traceback_hidden": "［已略去{parts}；jaxcourse.tracebac"
                       "ks.full_tracebacks() 会全部显示］",
    "draw_before": "之前",
    "draw_after": "之后",
    "draw_device": "设备",
    "draw_title_psum": "psum：每个设备都得到所有块的和",
    "draw_title_all_gather": "all_gather（tiled）：每个设备依序得到所有块",
    "draw_title_psum_scatter": "psum_scatter（tiled）：设备 d 得到和的第"
                              " d 片",
    "draw_title_all_to_all": "all_to_all（tiled）：设备 d 得到每一块的"
                            "第 d 片",
    "draw_title_ppermute": "ppermute：每个设备 d 把自己的块送给设备 d {"
                          "sign} {shift}（mod n）",
    "layout_width": "宽度 d",
    "layout_layers": "块数",
    "layout_batch": "全局批次",
    "layout_mesh": "网格（数据×模型）",
    "layout_layout": "布局",
    "layout_chip": "芯片",
    "layout_params": "参数",
    "layout_state": "每个设备的训练状态（float32）",
    "layout_sent": "每步每个设备发送的字节（bfloat16）",
    "layout_compute": "计算时间（以 bfloat16 峰值 FLOP/s 计）",
    "layout_comm": "通信时间（bfloat16）",
    "layout_step": "一步（屋顶线）",
    "layout_bound_compute": "受计算限制",
    "layout_bound_comm": "受通信限制",
    "layout_fits": "放得下",
    "layout_too_big": "放不下",
    "layout_state_line": "{state}（芯片内存 {hbm} 的 {pct}：{verdict}）",
    "layout_source": "依本章的公式计算：训练状态每个参数 16 字节"
                     "（float32 加 Adam），发送的字节以 bfloat16 计。"
                     "本章已用小模型编译后的程序验证这些公式。",
    "layout_text": "布局探索器：选择模型、批次、8 个设备的网格、布局与芯片，"
                   "看每个设备的内存、发送的字节与屋顶线"
                   "估计的步骤时间。",
    "layout_compiled_memory": "编译后的程序（float32）：每个设备的内存",
    "layout_compiled_memory_line": "参数 {arguments} + 临时缓冲区 {temp}；"
                                  "共 {peak}",
    "layout_compiled_sent": "编译后的程序（float32）：集体运算",
    "layout_compiled_sent_line": "{counts}；每个设备发送 {sent}（公式：{for"
                                "mula}）",
    "layout_source_compiled": "标为“编译后的程序”的各行，是把这一步只依形状（scalin"
                             "g.compile_from_shapes）为 8 个模拟 "
                             "CPU 设备以 float32 编译所得；其余依本章的公式计"
                             "算，发送的字节以 bfloat16 计。在这个 CPU 上，"
                             "XLA 用 all-reduce 对 FSDP 的梯度求和，"
                             "公式则是 reduce-scatter。",
    "layout_not_compiled_deep": "超过 {layers} 个块的模型不在这里编译：编译时间随"
                               "深度增加。",
    "layout_not_compiled_devices": "没有编译：这个 Jupyter kernel 的设备少于 8"
                                  " 个（请先调用 use_cpu_devices(8)）。",
    "layout_choice": "宽度 {width}、{layers} 个块、全局批次 {batch}、"
                     "网格 {mesh}、{layout}、{chip}",
    "layout_busy": "正在计算：{choice}……灰色的数字仍是上一个选择的结果。",
    # Transformer 探索器（jaxcourse.exercises.widgets.explorers_transformer）。
    "tfx_config": "模型设置",
    "tfx_seq": "序列长度",
    "tfx_batch": "全局批次（序列数）",
    "tfx_chip": "芯片",
    "tfx_nodes": "节点数",
    "tfx_mesh": "网格（FSDP×TP）",
    "tfx_precision": "精度",
    "tfx_remat": "重计算（remat）策略",
    "tfx_micro": "微批次数",
    "tfx_attention": "注意力",
    "tfx_params": "参数",
    "tfx_cluster": "集群",
    "tfx_cluster_line": "{chips} 个 {chip}：{nodes} 个节点，每个 {per} 个；网格 {data}"
                        "×{model}，布局 {layout}",
    "tfx_state": "每个设备的训练状态（{precision}）",
    "tfx_state_line": "两步之间 {stored}；一步之中 {step}（加上 {dtype} 的权重副本与"
                      "梯度）",
    "tfx_activations": "每个设备的激活值（remat {remat}，微批次数：{micro}）",
    "tfx_activations_line": "为反向传播保留 {kept}（每个词元 {per_token} × {tokens}"
                            " 个词元）+ 一个块在 HBM 中的注意力分数 {scores}"
                            "（float32），注意力形式 {attention}",
    "tfx_gathered": "一步之中 FSDP 收集的权重",
    "tfx_gathered_line": "{gathered}（{dtype}：完整的嵌入层与输出层，加上一个块的"
                         "权重）",
    "tfx_memory": "每个设备的内存",
    "tfx_memory_line": "{memory}（芯片内存 {hbm} 的 {pct}：{verdict}）",
    "tfx_fits": "放得下",
    "tfx_too_big": "放不下",
    "tfx_sent": "每步每个设备发送的字节（{dtype}）",
    "tfx_sent_line": "{sent}（FSDP 的轴上 {data}，TP 的轴上 {model}）",
    "tfx_compute": "计算时间（以 bfloat16 峰值 FLOP/s 计）",
    "tfx_comm": "通信时间",
    "tfx_step": "一步（屋顶线）",
    "tfx_bound_compute": "受计算限制",
    "tfx_bound_comm": "受通信限制",
    "tfx_critical": "每颗芯片每个微批次的词元数",
    "tfx_critical_line": "{tokens}（超过 {critical} 即受计算限制）",
    "tfx_compiled_memory": "编译后的程序：每个设备的内存",
    "tfx_compiled_memory_line": "参数 {arguments}（公式：{formula}）+ 临时缓冲区 "
                                "{temp}（公式：{inside}）；XLA 的峰值 {peak}",
    "tfx_compiled_collectives": "编译后的程序：集体运算（循环主体只算一次）",
    "tfx_compiled_collectives_line": "{counts}（预测：{predicted}）",
    "tfx_source": "依本章的公式计算：训练状态出自 state_bytes 与 bytes_per_param，激"
                  "活值出自 JAX 依形状追踪列出的保留残差，发送的字节与时间出自 phas"
                  "e_bytes 与 step_time，按每个微批次计算。",
    "tfx_source_compiled": "标为“编译后的程序”的各行，是把这一步只依形状为模拟的 CP"
                           "U 设备编译所得（transformer.compile_step）；其余依本章的"
                           "公式计算。编译后的临时缓冲区包含公式在一步之中计算的部分"
                           "，而且更多：在 CPU 上，XLA 会保留 GPU 或 TPU 的编译器会"
                           "融合或重用的缓冲区。重计算策略会在反向传播时再收集一次权重"
                           "，所以编译后的程序的 all-gather 比预测的多。",
    "tfx_not_compiled_deep": "超过 {layers} 层的模型设置不在这里编译：编译时间随深度"
                             "增加。",
    "tfx_not_compiled_devices": "没有编译：这个 Jupyter kernel 的设备少于 {chips} 个"
                                "（请先调用 use_cpu_devices({chips})）。",
    "tfx_not_compiled_micro": "没有编译：transformer.compile_step 只编译一个微批次；"
                              "选 1 个微批次才会编译。",
    "tfx_not_compiled_splash": "没有编译：splash 核心是为 TPU 编译的；在模拟的 CPU "
                               "设备上 Pallas 只能逐步解译它，太慢。它的分数留在芯片"
                               "的片上内存里：HBM 中一个也没有。",
    "tfx_invalid_batch": "{batch} 个序列的全局批次无法分给 {data} 个 FSDP 设备 × "
                         "{micro} 个微批次：请选较大的批次、较少的微批次或较小的网格。",
    "tfx_text": "Transformer 探索器：选择 LLaMA-3 形状的模型设置、集群、网格、精度、"
                "重计算策略、微批次数与注意力的形式，看每个设备的内存与芯片内存的比较、"
                "发送的字节与"
                "屋顶线估计的步骤时间。",
    "tfx_choice": "{config}、{nodes} 个节点的 {chip}、网格 {mesh}、{precision}、"
                  "remat {remat}、{micro} 个微批次、{batch} × {seq} 个词元、"
                  "注意力 {attention}",
    "tfx_busy": "正在计算：{choice}……灰色的数字仍是上一个选择的结果。",
    # 探索器的长条图（jaxcourse.exercises.widgets.explorer_charts）。
    "chart_memory_title": "每个设备的内存与芯片的 HBM",
    "chart_time_title": "每一步的时间（屋顶线）",
    "chart_plan": "规划（公式）",
    "chart_compiled": "编译后（XLA）",
    "chart_over": "放不下",
    "chart_part_params": "参数",
    "chart_part_grads": "梯度",
    "chart_part_optimizer": "优化器（Adam）",
    "chart_part_gathered": "收集的权重",
    "chart_part_activations": "激活值",
    "chart_part_scores": "注意力分数（一个块）",
    "chart_part_arguments": "参数（状态与批次）",
    "chart_part_temp": "临时缓冲区",
    "chart_part_outputs": "输出",
    "chart_part_at_peak": "XLA 峰值时的其他缓冲区",
    "chart_part_compute": "计算时间",
    "chart_part_comm": "通信时间",
    "chart_part_step": "一步（屋顶线）",
    "chart_memory_summary": "每个设备内存的长条图：规划需要 {plan}（芯片 {hbm} 的 "
                            "{pct}）。",
    "chart_memory_summary_compiled": "每个设备内存的长条图：规划需要 {plan}（芯片 "
                                     "{hbm} 的 {pct}），编译后的程序需要 {compiled}"
                                     "（XLA）。",
    "chart_time_summary": "每一步时间的长条图：计算 {compute}，通信 {comm}，"
                          "一步共 {step}（屋顶线）。",
    # 第 10 章的训练步探索器。
    "step_before": "从",
    "step_after": "到",
    "step_source": "{kind}，测于 {date}（JAX {jax}，libtpu {libtpu}）。",
    "step_run": "{key}：每步 {ms:.1f} ms，{tokens:,} 个词元，MFU {mfu:.1%}"
    "（按 MaxText 的方式计算）。",
    "step_refused": "{key}：被编译器拒绝：它的暂存内存需要 {needed:.2f} GiB，"
    "芯片只有 {available:.2f} GiB。",
    "step_parts_head": "每个词元的微秒数，按部分：{before}、{after}、变化。",
    "step_axis": "每个词元的微秒数（芯片的追踪记录，按部分）",
    "step_unknown": "没有名为 {key} 的已存运行；已有的运行：{known}。",
    "step_text": "训练步探索器：选择两次在芯片上测得的运行；每次都按部分画出每个词元的"
    "微秒数，并给出训练步时间与 MFU。",
}
