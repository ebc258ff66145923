"""The catalogue's texts in Traditional Chinese (Taiwan's terms)."""

TEXTS: dict[str, str] = {
    "check": "檢查",
    "hint": "提示",
    "show_solution": "顯示解答",
    "hide_solution": "隱藏解答",
    "release_solution_note": ("在這份課堂發布版中，老師公布解答之前，"
                              "**顯示解答**按鈕不能使用（把滑鼠移到按鈕上會顯示何時開放）。"),
    "hint_n": "提示 {n}／{total}",
    "no_hints": "這題沒有提示。",
    "no_more_hints": "沒有更多提示了。",
    "solution_heading": "參考解答",
    "solution_unavailable": "找不到參考解答的原始碼。",
    "solution_withheld": "這份課堂版本不含解答。",
    "solution_from": "解答將於 {date} 開放。",
    "solution_unpublished": "解答自 {date} 開放，但老師還沒有把解答加進這份課堂版本。",
    "reference_withheld": "這份課堂版本不含參考解答：檢查時比對"
    "的是隨附儲存的參考輸出，但它們在這裡不適"
    "用（{why}）。請向老師索取為這個環境製作的版本。",
    "summary": "{id}：{passed}/{total} 項測試通過",
    "summary_not_attempted": "{id}：尚未作答（0/{total} 項測試）",
    "summary_deferred": "{id}：另行評分",
    "checking": "檢查中……",
    "attempt": "第 {n} 次檢查",
    "check_library_answer": "這就是課程自己的函式 `{name}`：請自己寫出推論過程"
    "（課堂評分會把它算作借用的答案）",
    "structure_array": "陣列",
    "path_first_item": "第 {n} 個回傳值",
    "path_first_key": "回傳的 {key} 項",
    "path_item": "{whole}的第 {n} 項",
    "path_key": "{whole}的 {key} 項",
    "at_path": "{where}：{problem}",
    "label_sep": "：",
    "all_passed": "全部測試通過。",
    "ok": "{test}：通過",
    "advice": "{test}：通過，但請注意：{problem}",
    "failed": "{test}：{problem}",
    "expected_got": "預期 {expected}，得到 {got}",
    "not_attempted": "尚未作答（函式仍然丟擲 NotImplementedError）",
    "missing_function": "找不到名為 `{name}` 的函式",
    "not_callable": "`{name}` 是 {type}，不是函式",
    "raised": "丟擲 {error}",
    "raised_under": "在 {transform} 之下丟擲 {error}",
    "jit_advice": "程式在 JAX 只有追蹤值（tracer）的地方需要具體數值："
    "請改用 jnp 函式與 jnp.where，"
    "不要對陣列使用 NumPy、Python 的 if、int() 或 float()",
    "global_shape_advice": "每個行程那一塊的形狀必須符合全域形狀分給它的那一份"
    "（它分到的筆數、補齊後的長度）：你補齊的是哪一個軸？全域形狀算了幾筆？",
    "tracer_leak": "有 JAX tracer 逃出了轉換"
    "（是否把 jit/grad/vmap 內算出的值存進全域變數？）",
    "timeout": "{seconds:g} 秒內沒有完成，已停止：{likely}",
    "timeout_busy": "它自己的 {seconds:g} 秒內沒有完成，時鐘上過了 {wall:.0f} "
    "秒時被停止（這段時間其他程式也占著 CPU 核心）：{likely}",
    "endless_loop": "是否有永不結束的迴圈？例如條件永遠不變的 `while` 迴圈",
    "endless_repeat": "資料集是否永遠取不完？沒有給次數的 `.repeat()` "
    "會無限重複資料集，走訪它就永遠不會結束",
    "endless_collective": "行程是否不同步？集體運算會一直等待已經離開的行程："
    "每個行程都必須以相同的順序、相同的次數呼叫相同的集體運算",
    "skipped_after_timeout": "略過：先前的測試已逾時",
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
    "wrong_values_one": "數值錯誤：預期 {expected}，得到 {got}（差異 {diff:.3g}）",
    "advice_not_counted": "建議，不計分",
    "wrong_values_large": "{size} 個元素中有 {count} 個數值錯誤"
    "（最大差異 {diff:.3g}，"
    "位於索引 {index}：預期 {expected:.4g}，得到 {got:.4g}）",
    "mutated_input": "直接修改了輸入（第 {arg} 個引數）；請回傳新的值",
    "transposed": "兩個軸似乎對調了",
    # 對學習者編譯後程式的測量（judging._measured）。
    "measured_collectives": "編譯後的程式含有 {got}，其實 {expected} 就夠了",
    "measured_bytes": "編譯後的程式裡每臺裝置傳送 {got} 位元組，"
    "是足夠的 {expected} 位元組的 {ratio} 倍",
    "measured_share": "一臺裝置做了 {got} 的工作，其實可以只做 {expected}",
    "count_of": "{n} 個 {name}",
    "no_collective": "沒有集體運算",
    "layout_split": "陣列被切成 {got}，預期是 {expected}",
    "layout_elsewhere": "切出的片段沒錯（{pieces}），但放在別的裝置上："
    "網格軸的順序反了嗎？",
    "layout_pieces": "第 {dim} 維 {n} 塊",
    "layout_whole": "一整塊（每臺裝置都持有全部）",
    "no_shard_map": "你的函式裡沒有 jax.shard_map：編譯器也許能算出正確的值，"
    "但這道練習要你自己寫出逐裝置的程式和它的集體運算",
    "shard_map_not_needed": "你的函式用了 jax.shard_map，而這裡要的是編譯器自己的切分",
    "not_jitted": "你回傳的函式沒有用 jax.jit 編譯：它會逐個運算執行，"
    "而其中的切分約束只在 jit 之下才有作用",
    "jitted_not_needed": "你回傳的函式用 jax.jit 編譯了，而這裡要的是一般的函式",
    "share_all": "全部",
    "list_joiner": "、",
    "pattern_factor": "每個值都是預期值的 {factor}：是不是該取平均的地方做了加總"
    "（或反過來），或多乘了裝置數、批次大小之類的因子？",
    "pattern_factor_no_devices": "每個值都是預期值的 {factor}：是不是該取平均的"
    "地方做了加總（或反過來），或多乘了某個數量或大小？",
    "pattern_factor_one": "這個值是預期值的 {factor}",
    "cause_bits": "：是不是把位元當成了位元組（1 位元組是 8 位元），"
    "或在該用給定數量的地方寫死了 8？",
    "cause_percent": "：是不是該用分數的地方用了百分比（沒有除以 100），或反過來？",
    "wrong_choice": "預期 {expected}，得到 {got}",
    "choice_outside": "{got} 不是 {among} 中的任何一個",
    "none_as_text": "請直接回傳 None，而不是看起來像它的字串",
    "spec_dimension": "第 {dim} 維{got}，預期 {expected}",
    "spec_over": "沿 {axis} 切分",
    "spec_whole": "未切分（None）",
    "spec_none": "None（不切分）",
    "spec_rank": "規格 {spec} 有 {got} 項，但陣列有 {expected} 維",
    "factor_times": "{n} 倍",
    "factor_part": "{n} 分之一",
    "factor_other": "{k:.4g} 倍",
    "pattern_negatives": "正值都對，但負值沒有被設為零：是不是漏了 relu"
    "（或與 0 取最大值）？",
    "pattern_first_block": "沿第 0 軸的 {n} 個元素中，前 {k} 個正確，"
    "其餘都錯：是不是只算了第一臺裝置的那一塊，或其他塊沒有收集回來？",
    "echoed_input": "它原封不動地回傳了第 {arg} 個參數：算出的結果有回傳嗎？",
    # How a wrong number relates to the right one (checking.relations).
    "relation_sum_for_max": "這是取總和得到的值，而預期的是兩者中較大的一個：是不是把"
                            "重疊進行的兩段時間相加了（或把先後發生的兩項需求相加）？",
    "relation_sum_for_min": "這是取總和得到的值，而預期的是兩者中較小的一個",
    "relation_max_for_sum": "這是取兩者中較大者得到的值，而預期的是兩者之和：是不是把"
                            "先後發生的兩部分當成重疊了？",
    "relation_rounding": "這是換一種捨入方式得到的值：預期{want}，卻用了{got}",
    "rule_ceil": "無條件進位（ceil）",
    "rule_floor": "無條件捨去（floor）",
    "rule_round": "四捨五入（round）",
    "relation_boundary": "邊界讀反了：預期 {want}，卻用了 {got}，所以正好落在邊界上的"
                         "值被歸到了錯的一邊",
    "relation_off_by_one": "差了一：計數多了一個或少了一個（該用 n - 1 的地方用了 n，"
                           "或反過來）",
    "relation_ring": "漏了環的比例：{n} 個裝置中每個傳送 {n} 份中的 {n} - 1 份，所以"
                     "位元組數是全部的 ({n} - 1)/{n}",
    "relation_part_left_out": "總和中漏了一部分",
    "relation_part_twice": "總和中有一部分算了兩次",
    "relation_not_divided": "沒有除以 {name}",
    "relation_not_multiplied": "沒有乘以 {name}",
    "relation_multiplied_for_divided": "該除以 {name} 的地方乘以了 {name}",
    "relation_factor_left_out": "漏了一個 {k} 倍的因子",
    "relation_byte_width": "每個數用了 {got} 個位元組，而預期是 {want} 個（bfloat16 "
                           "每個數 2 位元組，float32 4 位元組）",
    "relation_times_input": "這個值是預期值的 {n} 倍，而 {n} 正是 {name}：是不是多乘"
                            "了一次 {name}，或少除了一次？",
    "relation_over_input": "這個值是預期值的 {n} 分之一，而 {n} 正是 {name}：是不是多"
                           "除了一次 {name}，或少乘了一次？",
    "relation_gib": "單位：把 GiB（2**30 位元組）和 GB（10**9 位元組）弄混了",
    "relation_kib": "單位：把 1,024 和 1,000 弄混了（KiB 與 kB）",
    "relation_other_test": "這是另一項測試（{test}）的正確值：答案有沒有用到這項測試"
                           "的每個輸入，還是回傳了只適合範例的值？",
    "relation_one_more": "比預期值多一：邊界是不是算反了（< 與 <=、ceil 與 round 或 f"
                         "loor、n 與 n - 1）？",
    "relation_one_less": "比預期值少一：邊界是不是算反了（< 與 <=、ceil 與 round 或 f"
                         "loor、n 與 n - 1）？",
    "relation_plus_input": "這是預期值加上 {amount}：是不是把不屬於答案的東西一起算進"
                           "去了？",
    "relation_minus_input": "這是預期值減去 {amount}：是不是漏了答案的一部分？",
    "relation_off_by_one_named": "差了一：該用 {want} 的地方用了 {got}",
    "rel_transposed": "數值都對，但轉置了：兩個軸對調（多寫或少寫了一個 .T，"
    "或乘積的兩個運算元順序反了？）",
    "rel_unit_axis_extra": "數值都對，但多了一個長度為 1 的軸：多了一次 reshape、"
    "[:, None] 或 keepdims=True？",
    "rel_unit_axis_missing": "數值都對，但少了長度為 1 的那個軸：多了一次 squeeze "
    "或索引？",
    "rel_reshaped": "數值和順序都對，但形狀是 {got}：reshape 成錯的形狀了？",
    "rel_reduced_all": "這是所有預期值的{op}：該逐項給值的地方只給了一個數"
    "（沿每個軸都歸約了）",
    "rel_reduced": "這是預期值沿第 {axes} 軸的{op}：沿一個該保留的軸歸約了",
    "rel_not_reduced": "你的值沿第 {axes} 軸取{op}才是預期值：少了這一步{op}",
    "rel_first_part": "這是沿第 {axis} 軸預期的 {n} 個中的前 {m} 個：後面 {rest} "
    "個漏掉了（最後較小的那一份被丟掉了？）",
    "rel_last_part": "這是沿第 {axis} 軸預期的 {n} 個中的後 {m} 個：前面 {rest} "
    "個漏掉了",
    "rel_more_after": "沿第 {axis} 軸，你的前 {n} 個就是預期值，後面又多了 {rest} 個",
    "rel_more_before": "沿第 {axis} 軸，你的後 {n} 個就是預期值，前面多了 {rest} 個",
    "rel_repeated": "這是預期值沿第 {axis} 軸並排重複了 {k} 次：只要一份的地方"
    "放了好幾份",
    "rel_axis_times": "第 {axis} 軸有 {got} 個元素，預期 {expected} 個：是 {k} 倍",
    "rel_axis_part": "第 {axis} 軸有 {got} 個元素，預期 {expected} 個：只有 {k} "
    "分之一",
    "rel_same_slices": "沿第 0 軸的 {n} 個切片全都一樣，預期的卻各不相同："
    "同一份值（例如同一次抽出的亂數）被重複用了？",
    "rel_reversed": "數值都對，但沿第 {axis} 軸順序反了",
    "rel_sorted": "數值都對，但被排序了：預期的順序不見了",
    "rel_rows_reordered": "沿第 0 軸的各個切片都對，但順序不同：被打亂了，"
    "或按別的東西排序了？",
    "rel_within_rows": "沿第 0 軸的每個切片都有它該有的值，但順序不同",
    "rel_reordered": "數值都對，但順序不同",
    "rel_truncated": "預期是小數，得到的卻是整數：每個都是預期值去掉小數部分"
    "（用了整數除法 //，或轉成了 int？）",
    "rel_float_for_int": "整數值都對，但型別是 {got}，預期 {expected}：除法 / "
    "或某次轉換改了型別",
    "rel_other_float": "數值都對，但型別是 {got}，預期 {expected}：轉成了別的精度？",
    "rel_extra_items": "預期值是你回傳的 {count} 項中的第 {n} 項：只回傳它就好",
    "rel_only_part": "這只是預期值 {structure} 的{part}：要回傳整個值",
    "rel_items_more": "有 {got} 項，預期 {expected} 項：前 {expected} 項都對，"
    "後面又多了 {extra} 項",
    "rel_items_more_empty": "有 {got} 項，預期 {expected} 項：前 {expected} 項都對，"
    "最後一項是空的",
    "rel_items_fewer": "預期 {expected} 項，只有 {got} 項，每項都對：最後 {missing} "
    "項不見了",
    "rel_unstacked": "這是 {n} 棵樹的串列，預期的是一棵樹，它的每個陣列沿新的第一個"
    "軸放著這 {n} 份：要逐葉用 jnp.stack 合起來",
    "spec_swapped": "網格軸放到了彼此的維度上：預期 {expected}，得到 {got}",
    "op_sum": "總和",
    "op_mean": "平均",
    "op_max": "最大值",
    "op_min": "最小值",
    "err_axis_not_in_mesh": "規格用了網格軸 {axis}，但這個測試的網格沒有這個軸"
    "（它的軸是 {axes}）：軸名要從給你的網格取，別照抄範例",
    "err_unbound_axis": "集體運算用了軸 {axis}，但外層沒有任何東西綁定它："
    "在 shard_map 裡用網格的軸名，在 vmap 或 pmap 裡用傳給它的 axis_name",
    "err_vmap_sizes": "vmap 對映的幾個引數，被對映的軸長度不一樣：每個樣本共用的"
    "引數在 in_axes 裡要給 None，或者對映的軸不是批次的軸",
    "err_vmap_rank": "vmap 要對映一個沒有第 {axis} 軸的引數（一個數？）："
    "在 in_axes 裡給它 None；關鍵字引數一定會被對映，所以共用的引數要按位置傳，"
    "或在閉包裡取用",
    "err_reshape": "要求的形狀 {shape} 裝不下現有的 {size} 個值：是不是寫死了一個"
    "大小，或用錯了量去算？大小要從輸入的形狀取",
    "err_truth_value": "對陣列用了 Python 的 if、and、or 或連續比較，但陣列的每個"
    "元素各有一個真假值：改用 jnp.where、jnp.maximum 或其他陣列運算",
    "err_index_by_name": "用名字去索引一個 {kind}：這些項是 {kind}，要按位置取，"
    "不是 dict",
    "err_block_and_whole": "大小 {small} 碰上了大小 {large} = {k} × {small}："
    "一個運算元是一臺裝置的那一塊，另一個是分在 {k} 臺裝置上的整個陣列；"
    "兩者的規格（或切分所沿的軸）不一樣",
    "err_contracting": "乘積沿大小 {a} 和 {b} 的兩個軸加總，這兩個大小必須一致："
    "運算元的軸不是預期的那些（少了轉置，或對映、切分錯了軸？）",
    "err_tracer_sharding": "在 jit 裡讀不到陣列的 .sharding："
    "jax.typeof(x).sharding 才能給出它的布局",
    "err_not_divisible": "規格把某個引數的軸切給一組裝置，但軸長不能被裝置數整除："
    "網格軸放錯了維度，或兩個軸對調了？",
    "err_out_replication": "out_specs 裡少了一個網格軸，這表示結果在那個軸的每臺"
    "裝置上都一樣，但沒有任何運算讓它一樣：先沿那個軸歸約（psum），"
    "或在 out_specs 裡寫出這個軸",
    "err_ring_count": "環的配對用到了 {named} 臺裝置，但這個軸只有 {devices} 臺："
    "要從軸的大小（jax.lax.axis_size）建出配對，別寫死數字",
    "err_scatter_untiled": "psum_scatter 不加 tiled=True 時，要分散的軸必須剛好有 "
    "{count} 個元素，每臺裝置一個；tiled=True 才會把長度 {size} 的軸切成幾塊",
    "err_concatenate_numbers": "concatenate 沿陣列已有的軸接起來，但這些都是單一"
    "的數：要用 np.stack 疊起來，做出一個新軸",
    "err_stack_shapes": "要疊起來的陣列形狀不一樣：把不同種類的部分（影像和標籤？）"
    "疊在一起了，每一種要各自疊",
    "err_ragged": "用形狀不同的項或巢狀序列建陣列：這些項不是一個樣（要先把"
    "成對的項拆開？）",
    "err_partial_batch": "批次只有 {got} 筆，每一步卻要 {size} 筆：步數還沒跑完，"
    "資料就用完了（步數比完整批次多：次數進位了，或不是每個行程中最小的那個？）",
    "err_host_rows": "這個行程沿第 {dim} 維有 {has} 筆，全域形狀 {shape} 卻分給它 "
    "{addr} 筆：全域形狀是所有行程的資料合起來（自己的筆數乘以行程數），不多也不少",
    "reduced_axis": "形狀是某個輸入沿第 {got} 軸歸約後的形狀，"
    "預期是沿第 {expected} 軸：軸選錯了嗎？",
    "array_for_number": "預期一個數，卻得到一個陣列："
    "是不是漏了求和、平均或 .item()？",
    "bool_for_number": "預期一個數，卻得到 True/False："
    "是不是做了比較，而不是計數或取值？",
    "pattern_negated": "每個值的正負號都相反：是不是相減的順序反了？",
    "pattern_offset": "每個值都差了同樣的量（{offset:.4g}）：是不是多加了一個常數，"
    "或漏加了？",
    "pattern_offset_axis": "沿第 {axis} 軸的每一片都差了同一組值：是不是多加或漏加了"
    "偏置、平均值或位置參數之類的一項？",
    "pattern_rolled": "這是預期值沿第 {axis} 軸移動了 {shift} 格的結果（或往另一個方向"
    "移動 {back} 格）：是不是在環上移錯了方向，或移太多格？",
    "not_vectorized": "追蹤出的程式隨批次變大（{n_small} 筆時 {small} 個運算，"
    "{n_large} 筆時 {large} 個）：是不是用 Python 迴圈逐筆處理？"
    "請改用陣列運算或 jax.vmap",
    "scanned_examples": "追蹤出的程式對 {n} 個樣本逐一掃描（lax.map 或長度等於批次"
    "的 scan）：樣本是一個接一個算的，不是成批計算；改用 jax.vmap 或陣列運算",
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
    "grading_cell_error": "第 {cell} 個程式碼儲存格引發了 {error}",
    "kernel_gone": "核心（kernel）已重新啟動：請重新執行上面的儲存格。",
    "explorer": "探索器",
    "explorer_static": "這是探索器的靜態畫面：在這個網頁上，控制項不會帶動任何"
                       "計算。要試用它，請把本章當作筆記本開啟（頁面頂端的火箭"
                       "按鈕：Binder 或 Colab），再執行它的儲存格。",
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
    "loader_text": "載入器探索器：每次測量讀取 {n} 筆；"
    "移動滑桿以測量另一個批次大小。",
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
    "sharding_invalid": "{spec} 在這裡不是有效的佈局：{error}",
    "sharding_layout": "{spec} 在 {mesh} 網格上：{layout}",
    "sharding_text": "分片探索器：選擇網格、PartitionSpec 與運算；"
    "佈局與其通訊隨之更新。",
    "collective": "集體運算",
    "devices": "裝置數",
    "collective_entries": "每臺裝置的元素數",
    "collective_problem": "{name} 在 {n} 臺裝置上會把每一塊切成 {n} 等份："
    "塊長度必須是 {n} 的倍數，而 {length} 不是",
    "collective_head": "{name} 跨 {n} 臺裝置，每塊 {length} 個 float32（{size} "
    "位元組）",
    "collective_compiled": "編譯成：{collectives}",
    "collective_none": "沒有集體運算",
    "collective_matches": "與集體運算的 NumPy 模型一致：{answer}",
    "yes": "是",
    "no": "否",
    "collective_sends": "每臺裝置約傳送 {sent} 位元組（{blocks:g} 塊，單向環）",
    "collective_device": "裝置 {d}：{before} -> {after}",
    "collective_more": "，…（共 {n} 個）",
    "collective_text": "集體運算探索器：選擇集體運算、裝置數與每臺裝置的元素數；"
    "每臺裝置前後的塊、編譯出的集體運算與傳送的位元組隨之更新。",
    "split_processes": "行程數",
    "split_devices": "每個行程的裝置數",
    "split_batch": "全域批次",
    "split_problem": "{batch} 筆無法平均分給 {devices} 臺裝置（{processes} 個行程 "
    "× {per_process}）：jax.make_array_from_process_local_data 會拒絕這個批次。"
    "請用 {devices} 的倍數：減到 {lower} 筆，或補到 {upper} "
    "筆（並用遮罩遮住補上的那幾筆）。",
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
    "grading_folder": "評分目錄",
    "grading_tamper_outside": "它試圖寫入自己目錄以外的地方（{path}）：零分",
    "grading_tamper_changed": "它執行時課程的檔案被修改了（{files}），已還原：零分",
    "grading_feedback_title": "回饋：{name}",
    "grading_status": "狀態：{status}",
    "grading_score": "分數：{total:g} / {count}",
    "grading_exercise": "{id}：{score:.0%}",
    "grading_borrowed_is": "借用了參考答案：`{name}` 就是課程的 `{reference}`，"
    "不是在筆記本裡寫的：零分",
    "grading_borrowed_calls": "借用了參考答案：`{name}` 執行了課程的 `{reference}`："
    "零分",
    "grading_borrowed_copy": "借用了參考答案：`{name}` 是從安裝的檔案執行的課程 "
    "`{reference}`，不是在筆記本裡寫的：零分",
    "grading_borrowed_library": "借用了參考答案：`{name}` 使用了課程的 `{reference}`，"
    "它傳回的就是這道練習的答案：零分",
    "grading_flag_pasted": "貼上了參考答案",
    "grading_flag_same": "與 {others} 的答案相同",
    # 佈局探索器（第 6 章）。
    "traceback_frames_1": "JAX 等函式庫內部的 1 層呼叫",
    "traceback_frames_n": "JAX 等函式庫內部的 {n} 層呼叫",
    "traceback_chain_1": "在它們內部先引發的 1 個例外",
    "traceback_chain_n": "在它們內部先引發的 {n} 個例外",
    "traceback_and": "，以及",
    "traceback_hidden": "［已略去{parts}；jaxcourse.tracebacks.full_tracebacks() "
                        "會全部顯示］",
    "draw_before": "之前",
    "draw_after": "之後",
    "draw_device": "裝置",
    "draw_title_psum": "psum：每臺裝置都得到所有塊的和",
    "draw_title_all_gather": "all_gather（tiled）：每臺裝置依序得到所有塊",
    "draw_title_psum_scatter": "psum_scatter（tiled）：裝置 d 得到和的第 d 片",
    "draw_title_all_to_all": "all_to_all（tiled）：裝置 d 得到每一塊的第 d 片",
    "draw_title_ppermute": "ppermute：每臺裝置 d 把自己的塊送給裝置 "
                           "d {sign} {shift}（mod n）",
    "layout_width": "寬度 d",
    "layout_layers": "塊數",
    "layout_batch": "全域批次",
    "layout_mesh": "網格（資料×模型）",
    "layout_layout": "佈局",
    "layout_chip": "晶片",
    "layout_params": "參數",
    "layout_state": "每個裝置的訓練狀態（float32）",
    "layout_sent": "每步每個裝置傳送的位元組（bfloat16）",
    "layout_compute": "計算時間（以 bfloat16 峰值 FLOP/s 計）",
    "layout_comm": "通訊時間（bfloat16）",
    "layout_step": "一步（屋頂線）",
    "layout_bound_compute": "受計算限制",
    "layout_bound_comm": "受通訊限制",
    "layout_fits": "放得下",
    "layout_too_big": "放不下",
    "layout_state_line": "{state}（晶片記憶體 {hbm} 的 {pct}：{verdict}）",
    "layout_source": "依本章的公式計算：訓練狀態每個參數 16 位元組"
                     "（float32 加 Adam），傳送的位元組以 bfloat16 計。"
                     "本章已用小模型編譯後的程式驗證這些公式。",
    "layout_compiled_memory": "編譯後的程式（float32）：每個裝置的記憶體",
    "layout_compiled_memory_line": "引數 {arguments} + 臨時緩衝區 {temp}；"
                                   "共 {peak}",
    "layout_compiled_sent": "編譯後的程式（float32）：集體運算",
    "layout_compiled_sent_line": "{counts}；每個裝置傳送 {sent}（公式：{formula}）",
    "layout_source_compiled": "標為「編譯後的程式」的各列，是把這一步只依形狀"
                              "（scaling.compile_from_shapes）為 8 個模擬 CPU 裝置"
                              "以 float32 編譯所得；其餘依本章的公式計算，傳送的"
                              "位元組以 bfloat16 計。在這個 CPU 上，XLA 用 all-reduce "
                              "對 FSDP 的梯度求和，公式則是 reduce-scatter。",
    "layout_not_compiled_deep": "超過 {layers} 個塊的模型不在這裡編譯："
                                "編譯時間隨深度增加。",
    "layout_not_compiled_devices": "沒有編譯：這個 Jupyter kernel 的裝置少於 8 個"
                                   "（請先呼叫 use_cpu_devices(8)）。",
    "layout_text": "佈局探索器：選擇模型、批次、8 個裝置的網格、佈局與晶片，"
                   "看每個裝置的記憶體、傳送的位元組與屋頂線"
                   "估計的步驟時間。",
    "layout_choice": "寬度 {width}、{layers} 個塊、全域批次 {batch}、"
                     "網格 {mesh}、{layout}、{chip}",
    "layout_busy": "正在計算：{choice}……灰色的數字仍是上一個選擇的結果。",
    # Transformer 探索器（jaxcourse.exercises.widgets.explorers_transformer）。
    "tfx_config": "模型設定",
    "tfx_seq": "序列長度",
    "tfx_batch": "全域批次（序列數）",
    "tfx_chip": "晶片",
    "tfx_nodes": "節點數",
    "tfx_mesh": "網格（FSDP×TP）",
    "tfx_precision": "精度",
    "tfx_remat": "重計算（remat）策略",
    "tfx_micro": "微批次數",
    "tfx_attention": "注意力",
    "tfx_params": "參數",
    "tfx_cluster": "叢集",
    "tfx_cluster_line": "{chips} 個 {chip}：{nodes} 個節點，每個 {per} 個；網格 "
                        "{data}×{model}，佈局 {layout}",
    "tfx_state": "每個裝置的訓練狀態（{precision}）",
    "tfx_state_line": "兩步之間 {stored}；一步之中 {step}（加上 {dtype} 的權重"
                      "副本與梯度）",
    "tfx_activations": "每個裝置的啟動值（remat {remat}，微批次數：{micro}）",
    "tfx_activations_line": "為反向傳播保留 {kept}（每個詞元 {per_token} × "
                            "{tokens} 個詞元）+ 一個塊在 HBM 中的注意力分數 {scores}"
                            "（float32），注意力形式 {attention}",
    "tfx_gathered": "一步之中 FSDP 收集的權重",
    "tfx_gathered_line": "{gathered}（{dtype}：完整的嵌入層與輸出層，加上一個塊的"
                         "權重）",
    "tfx_memory": "每個裝置的記憶體",
    "tfx_memory_line": "{memory}（晶片記憶體 {hbm} 的 {pct}：{verdict}）",
    "tfx_fits": "放得下",
    "tfx_too_big": "放不下",
    "tfx_sent": "每步每個裝置傳送的位元組（{dtype}）",
    "tfx_sent_line": "{sent}（FSDP 的軸上 {data}，TP 的軸上 {model}）",
    "tfx_compute": "計算時間（以 bfloat16 峰值 FLOP/s 計）",
    "tfx_comm": "通訊時間",
    "tfx_step": "一步（屋頂線）",
    "tfx_bound_compute": "受計算限制",
    "tfx_bound_comm": "受通訊限制",
    "tfx_critical": "每顆晶片每個微批次的詞元數",
    "tfx_critical_line": "{tokens}（超過 {critical} 即受計算限制）",
    "tfx_compiled_memory": "編譯後的程式：每個裝置的記憶體",
    "tfx_compiled_memory_line": "引數 {arguments}（公式：{formula}）+ 臨時緩衝區 "
                                "{temp}（公式：{inside}）；XLA 的峰值 {peak}",
    "tfx_compiled_collectives": "編譯後的程式：集體運算（迴圈主體只算一次）",
    "tfx_compiled_collectives_line": "{counts}（預測：{predicted}）",
    "tfx_source": "依本章的公式計算：訓練狀態出自 state_bytes 與 bytes_per_param，"
                  "啟動值出自 JAX 依形狀追蹤列出的保留殘差，傳送的位元組與時間"
                  "出自 phase_bytes 與 step_time，按每個微批次計算。",
    "tfx_source_compiled": "標為「編譯後的程式」的各列，是把這一步只依形狀為模擬的 "
                           "CPU 裝置編譯所得（transformer.compile_step）；其餘依本章"
                           "的公式計算。編譯後的臨時緩衝區包含公式在一步之中計算的"
                           "部分，而且更多：在 CPU 上，XLA 會保留 GPU 或 TPU 的編譯器"
                           "會融合或重用的緩衝區。重計算策略會在反向傳播時再收集一次"
                           "權重，所以編譯後的程式的 all-gather 比預測的多。",
    "tfx_not_compiled_deep": "超過 {layers} 層的模型設定不在這裡編譯：編譯時間隨深度"
                             "增加。",
    "tfx_not_compiled_devices": "沒有編譯：這個 Jupyter kernel 的裝置少於 {chips} 個"
                                "（請先呼叫 use_cpu_devices({chips})）。",
    "tfx_not_compiled_micro": "沒有編譯：transformer.compile_step 只編譯一個微批次；"
                              "選 1 個微批次才會編譯。",
    "tfx_not_compiled_splash": "沒有編譯：splash 核心是為 TPU 編譯的；在模擬的 CPU "
                               "裝置上 Pallas 只能逐步解譯它，太慢。它的分數留在晶片"
                               "的片上記憶體裡：HBM 中一個也沒有。",
    "tfx_invalid_batch": "{batch} 個序列的全域批次無法分給 {data} 個 FSDP 裝置 × "
                         "{micro} 個微批次：請選較大的批次、較少的微批次或較小的網格。",
    "tfx_text": "Transformer 探索器：選擇 LLaMA-3 形狀的模型設定、叢集、網格、精度、"
                "重計算策略、微批次數與注意力的形式，看每個裝置的記憶體與晶片記憶體的"
                "比較、傳送的位元組與屋頂線估計的步驟時間。",
    "tfx_choice": "{config}、{nodes} 個節點的 {chip}、網格 {mesh}、{precision}、"
                  "remat {remat}、{micro} 個微批次、{batch} × {seq} 個詞元、"
                  "注意力 {attention}",
    "tfx_busy": "正在計算：{choice}……灰色的數字仍是上一個選擇的結果。",
    # 探索器的長條圖（jaxcourse.exercises.widgets.explorer_charts）。
    "chart_memory_title": "每個裝置的記憶體與晶片的 HBM",
    "chart_time_title": "每一步的時間（屋頂線）",
    "chart_plan": "規劃（公式）",
    "chart_compiled": "編譯後（XLA）",
    "chart_over": "放不下",
    "chart_part_params": "參數",
    "chart_part_grads": "梯度",
    "chart_part_optimizer": "最佳化器（Adam）",
    "chart_part_gathered": "收集的權重",
    "chart_part_activations": "啟動值",
    "chart_part_scores": "注意力分數（一個塊）",
    "chart_part_arguments": "引數（狀態與批次）",
    "chart_part_temp": "臨時緩衝區",
    "chart_part_outputs": "輸出",
    "chart_part_at_peak": "XLA 峰值時的其他緩衝區",
    "chart_part_compute": "計算時間",
    "chart_part_comm": "通訊時間",
    "chart_part_step": "一步（屋頂線）",
    "chart_memory_summary": "每個裝置記憶體的長條圖：規劃需要 {plan}（晶片 {hbm} 的 "
                            "{pct}）。",
    "chart_memory_summary_compiled": "每個裝置記憶體的長條圖：規劃需要 {plan}（晶片 "
                                     "{hbm} 的 {pct}），編譯後的程式需要 {compiled}"
                                     "（XLA）。",
    "chart_time_summary": "每一步時間的長條圖：計算 {compute}，通訊 {comm}，"
                          "一步共 {step}（屋頂線）。",
    # 第 10 章的訓練步探索器。
    "step_before": "從",
    "step_after": "到",
    "step_source": "{kind}，測於 {date}（JAX {jax}，libtpu {libtpu}）。",
    "step_run": "{key}：每步 {ms:.1f} ms，{tokens:,} 個詞元，MFU {mfu:.1%}"
    "（按 MaxText 的方式計算）。",
    "step_refused": "{key}：被編譯器拒絕：它的暫存記憶體需要 {needed:.2f} GiB，"
    "晶片只有 {available:.2f} GiB。",
    "step_parts_head": "每個詞元的微秒數，按部分：{before}、{after}、變化。",
    "step_axis": "每個詞元的微秒數（晶片的追蹤記錄，按部分）",
    "step_unknown": "沒有名為 {key} 的已存執行；已有的執行：{known}。",
    "step_text": "訓練步探索器：選擇兩次在晶片上測得的執行；每次都按部分畫出每個詞元的"
    "微秒數，並給出訓練步時間與 MFU。",
}
