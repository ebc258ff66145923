"""The catalogue's texts in English."""

TEXTS: dict[str, str] = {
    # Buttons and panel text.
    "check": "Check",
    "hint": "Hint",
    "show_solution": "Show solution",
    "hide_solution": "Hide solution",
    "release_solution_note": (
        "In this class release, **Show solution** stays off until your "
        "teacher publishes the solutions (its tooltip says when)."),
    "hint_n": "Hint {n} of {total}",
    "no_hints": "This exercise has no hints.",
    "no_more_hints": "No more hints.",
    "solution_heading": "Reference solution",
    "solution_unavailable": "The reference source is not available.",
    # A class release (jaxcourse.exercises.checking.class_release): solutions shut.
    "solution_withheld": "The solutions are not part of this class release.",
    "solution_from": "The solutions open on {date}.",
    "solution_unpublished": "The solutions open on {date}, but your teacher has "
    "not added them to this release yet.",
    "reference_withheld": "This class release holds no reference answer: it "
    "checks answers against the reference outputs stored with it, which do not "
    "apply here ({why}). Ask your teacher for a release made for this "
    "environment.",
    # Summaries.
    "summary": "{id}: {passed}/{total} tests passed",
    "summary_not_attempted": "{id}: not attempted yet (0/{total} tests)",
    "summary_deferred": "{id}: graded separately",
    "checking": "Checking…",
    "attempt": "check {n}",
    "check_library_answer": "this is `{name}`, the course's own function: write "
    "the reasoning yourself (a class's grading counts it as borrowed)",
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
    # A case whose technique is advice: the answer passes, with a note.
    "advice": "{test}: passes, but note: {problem}",
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
    "global_shape_advice": "each process's block must have the shape the "
    "global shape gives it (its share of the rows, the padded length): which "
    "axis did you pad, and how many rows does the global shape count?",
    "tracer_leak": "a JAX tracer escaped a transformation (did you store a "
    "value computed inside jit/grad/vmap in a global?)",
    "timeout": "did not finish within {seconds:g} s, so it was stopped: {likely}",
    # What typically never ends (a case's ``endless``), said after "timeout".
    "timeout_busy": "did not finish within {seconds:g} s of its own time, so it was "
    "stopped after {wall:.0f} s on the clock (other programs held the cores "
    "meanwhile): {likely}",
    "endless_loop": "a loop that never ends? For example a `while` loop whose "
    "condition never changes",
    "endless_repeat": "a dataset that never runs out? `.repeat()` without a count "
    "repeats it for ever, so iterating over it never ends",
    "endless_collective": "processes out of step? A collective waits for ever for "
    "a process that has already left: every process must make the same "
    "collectives, in the same order, the same number of times",
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
    "wrong_values_one": "wrong values: expected {expected}, got {got} (difference "
    "{diff:.3g})",
    "advice_not_counted": "advice, not counted",
    "wrong_values_large": "wrong values in {count} of {size} entries (largest "
    "difference {diff:.3g} at index {index}: expected {expected:.4g}, got "
    "{got:.4g})",
    "mutated_input": "changed its input in place (argument {arg}); return a "
    "new value instead",
    "transposed": "the axes look swapped",
    # Measurements of the learner's compiled program (judging._measured).
    "measured_collectives": "the compiled program holds {got}, where {expected} "
    "would do",
    "measured_bytes": "in the compiled program each device sends {got} bytes, "
    "{ratio} times the {expected} that suffice",
    "measured_share": "one device does {got} of the work, where {expected} is "
    "possible",
    "count_of": "{n} {name}",
    "no_collective": "no collective",
    "layout_split": "the array is split into {got}, where {expected} was "
    "expected",
    "layout_elsewhere": "the pieces are the right ones ({pieces}), but on other "
    "devices: the mesh axes in the other order?",
    "layout_pieces": "{n} pieces along dimension {dim}",
    "layout_whole": "one piece (every device holds all of it)",
    "no_shard_map": "your function has no jax.shard_map: the compiler may get "
    "the values right, but this exercise is about writing the per-device "
    "program and its collective yourself",
    "shard_map_not_needed": "your function uses jax.shard_map where the "
    "compiler's own partitioning was asked for",
    "not_jitted": "the function you return is not compiled with jax.jit: it "
    "runs operation by operation, and a sharding constraint in it binds only "
    "under jit",
    "jitted_not_needed": "the function you return is compiled with jax.jit "
    "where a plain function was asked for",
    "share_all": "all",
    "list_joiner": ", ",
    # What a wrong value has in common with the expected one (judging._pattern).
    "pattern_factor": "every value is {factor} the expected one: a sum where a "
    "mean was needed (or the reverse), or a stray factor such as the device "
    "count or the batch size?",
    "pattern_factor_no_devices": "every value is {factor} the expected one: a "
    "sum where a mean was needed (or the reverse), or a stray factor such as a "
    "count or a size?",
    "pattern_factor_one": "the value is {factor} the expected one",
    "cause_bits": ": bits where bytes were meant (8 to a byte), or a count of 8 "
    "written in where another was given?",
    "cause_percent": ": a percent where a fraction was meant (not divided by "
    "100), or the reverse?",
    # A categorical answer, by its name; a PartitionSpec, by dimension.
    "wrong_choice": "expected {expected}, got {got}",
    "choice_outside": "{got} is not one of {among}",
    "none_as_text": "return None itself, not a string that reads like it",
    "spec_dimension": "dimension {dim} is {got}, expected {expected}",
    "spec_over": "sharded over {axis}",
    "spec_whole": "whole (None)",
    "spec_none": "None (kept whole)",
    "spec_rank": "the spec {spec} has {got} entries where the array has {expected} "
    "dimensions",
    "factor_times": "{n} times",
    "factor_part": "1/{n} of",
    "factor_other": "{k:.4g} times",
    "pattern_negatives": "the values agree where they are positive, but the "
    "negative ones were not set to zero: a relu (or a maximum with 0) left out?",
    "pattern_first_block": "the first {k} of {n} entries along axis 0 are "
    "right, the rest are not: only the first device's block computed, or the "
    "others never gathered?",
    "echoed_input": "it returns its argument {arg} unchanged: was the computed "
    "result returned?",
    # How a wrong number relates to the right one (checking.relations).
    "relation_sum_for_max": "it is the value of a sum where the larger of two is "
                            "meant: are two times added that overlap (or two needs "
                            "that come one after the other)?",
    "relation_sum_for_min": "it is the value of a sum where the smaller of two is "
                            "meant",
    "relation_max_for_sum": "it is the value of the larger of two where their sum is "
                            "meant: are two parts overlapped that come one after the "
                            "other?",
    "relation_rounding": "it is the value rounded another way: {got} where {want} is "
                         "meant",
    "rule_ceil": "rounding up (ceil)",
    "rule_floor": "rounding down (floor)",
    "rule_round": "rounding to the nearest (round)",
    "relation_boundary": "a boundary read the other way: {got} where {want} is "
                         "meant, so the value at the boundary falls on the wrong side",
    "relation_off_by_one": "it is off by one: a count with one too many or one too "
                           "few (n where n - 1 is meant, or the reverse)",
    "relation_ring": "the ring's share is left out: each of {n} devices sends {n} - "
                     "1 of the {n} pieces, so the bytes are ({n} - 1)/{n} of the "
                     "whole",
    "relation_part_left_out": "one part of the sum is left out",
    "relation_part_twice": "one part of the sum is counted twice",
    "relation_not_divided": "it is not divided by {name}",
    "relation_not_multiplied": "it is not multiplied by {name}",
    "relation_multiplied_for_divided": "it is multiplied by {name} where it should "
                                       "be divided by it",
    "relation_factor_left_out": "a factor of {k} is left out",
    "relation_byte_width": "a byte width of {got} where {want} bytes are meant "
                           "(bfloat16 is 2 bytes a number, float32 4)",
    "relation_times_input": "it is {n} times the expected value, {n} being {name}: "
                            "is {name} multiplied in once too often, or not divided "
                            "out?",
    "relation_over_input": "it is 1/{n} of the expected value, {n} being {name}: is "
                           "it divided by {name} once too often, or not multiplied "
                           "by it?",
    "relation_gib": "the unit: GiB (2**30 bytes) and GB (10**9 bytes) are taken one "
                    "for the other",
    "relation_kib": "the unit: 1,024 and 1,000 are taken one for the other (KiB for "
                    "kB, or the reverse)",
    "relation_other_test": "it is the right value of another test ({test}): does the "
                           "answer use every input of this one, or return a value "
                           "that fits only the example?",
    "relation_one_more": "it is one more than the expected value: a boundary counted "
                         "the other way (< and <=, ceil and round or floor, n and n "
                         "- 1)?",
    "relation_one_less": "it is one less than the expected value: a boundary counted "
                         "the other way (< and <=, ceil and round or floor, n and n "
                         "- 1)?",
    "relation_plus_input": "it is the expected value plus {amount}: is something "
                           "counted with the answer that is not part of it?",
    "relation_minus_input": "it is the expected value minus {amount}: is a part of "
                            "the answer left out?",
    "relation_off_by_one_named": "it is off by one: {got} where {want} is meant",
    "rel_transposed": "the right values, transposed: the two axes are swapped (a .T "
    "too many or too few, or a product's operands in the other order?)",
    "rel_unit_axis_extra": "the right values with an extra axis of length 1: a "
    "reshape, an [:, None] or a keepdims=True too many?",
    "rel_unit_axis_missing": "the right values without their axis of length 1: a "
    "squeeze or an index too many?",
    "rel_reshaped": "the right values, in their order, but in shape {got}: reshaped "
    "to the wrong shape?",
    "rel_reduced_all": "it is the {op} of all the expected values: one number where "
    "one value per entry was meant (reduced over every axis)",
    "rel_reduced": "it is the {op} of the expected values over axis {axes}: reduced "
    "over an axis that should stay",
    "rel_not_reduced": "the {op} of your values over axis {axes} is the expected "
    "value: that {op} is left out",
    "rel_first_part": "these are the first {m} of the {n} expected along axis "
    "{axis}: the last {rest} are left out (a last, smaller part dropped?)",
    "rel_last_part": "these are the last {m} of the {n} expected along axis {axis}: "
    "the first {rest} are left out",
    "rel_more_after": "your first {n} along axis {axis} are the expected values, "
    "and {rest} more follow them",
    "rel_more_before": "your last {n} along axis {axis} are the expected values, "
    "and {rest} more come before them",
    "rel_repeated": "the expected values {k} times over, side by side along axis "
    "{axis}: copies put together where one was meant",
    "rel_axis_times": "axis {axis} has {got} entries where {expected} were "
    "expected: {k} times as many",
    "rel_axis_part": "axis {axis} has {got} entries where {expected} were "
    "expected: 1/{k} of them",
    "rel_same_slices": "all {n} slices along axis 0 are the same, where the "
    "expected ones differ: one value (one draw of noise, say) reused for each?",
    "rel_reversed": "the right values in reverse order along axis {axis}",
    "rel_sorted": "the right values, sorted: the order they were expected in is lost",
    "rel_rows_reordered": "the right slices along axis 0, in another order: "
    "shuffled, or ordered by something else?",
    "rel_within_rows": "each slice along axis 0 holds its right values, in another "
    "order",
    "rel_reordered": "the right values, in another order",
    "rel_truncated": "whole numbers where fractions were expected: each is the "
    "expected value with its fraction cut off (an integer division // or a cast "
    "to int?)",
    "rel_float_for_int": "the right whole numbers, stored as {got} where {expected} "
    "was expected: a division / or a conversion changed the type",
    "rel_other_float": "the right values, in {got} where {expected} was expected: "
    "converted to another precision?",
    "rel_extra_items": "the expected value is the {ordinal} of the {count} items "
    "returned: return it alone",
    "rel_only_part": "this is only {part} of the expected {structure}: return the "
    "whole of it",
    "rel_items_more": "{got} items where {expected} were expected: the first "
    "{expected} are right, and {extra} more follow",
    "rel_items_more_empty": "{got} items where {expected} were expected: the first "
    "{expected} are right, and the last is empty",
    "rel_items_fewer": "{got} of the {expected} expected items, each right: the "
    "rest ({missing}) are missing",
    "rel_unstacked": "a list of {n} trees, where one tree was expected whose every "
    "array holds the {n} along a new first axis: stack them, leaf by leaf",
    "spec_swapped": "the mesh axes are on each other's dimensions: {got} for "
    "{expected}",
    "op_sum": "sum",
    "op_mean": "mean",
    "op_max": "maximum",
    "op_min": "minimum",
    "err_axis_not_in_mesh": "the spec names mesh axis {axis}, which this test's "
    "mesh does not have (its axes: {axes}): take the axis names from the mesh you "
    "are given, not from an example",
    "err_unbound_axis": "a collective names axis {axis}, which nothing around it "
    "binds: inside shard_map use the mesh's axis names, inside vmap or pmap the "
    "axis_name given to it",
    "err_vmap_sizes": "vmap maps arguments whose mapped axes differ in length: an "
    "argument every item shares should get None in in_axes, or the axes mapped "
    "are not the batch's",
    "err_vmap_rank": "vmap maps an argument that has no axis {axis} (a single "
    "number?): give it None in in_axes; keyword arguments are always mapped, so "
    "pass a shared one by position or close over it",
    "err_reshape": "the shape asked for, {shape}, does not hold the {size} values "
    "there are: a size written in, or computed from the wrong quantity? Take the "
    "sizes from the input's shape",
    "err_truth_value": "a Python if, and, or or a chained comparison on an array, "
    "which has one truth value per entry: use jnp.where, jnp.maximum or another "
    "operation on arrays",
    "err_index_by_name": "a {kind} indexed by a name: these items are {kind}s, "
    "read by position, not dicts",
    "err_block_and_whole": "a size of {small} met a size of {large} = {k} × "
    "{small}: one operand is a device's block and the other the whole array over "
    "{k} devices; their specs (or the axes they are split over) differ",
    "err_contracting": "a product sums over axes of sizes {a} and {b}, which must "
    "agree: the operands' axes are not the ones meant (a transpose, or the wrong "
    "axis mapped or split?)",
    "err_tracer_sharding": "under jit an array's .sharding cannot be read: "
    "jax.typeof(x).sharding gives its layout",
    "err_not_divisible": "a spec splits an argument's axis over a number of "
    "devices that does not divide its length: the mesh axis is on the wrong "
    "dimension, or the axes are swapped?",
    "err_out_replication": "out_specs leaves a mesh axis out, which says the "
    "result is the same on every device of that axis, and nothing makes it so: "
    "reduce over that axis first (psum), or name it in out_specs",
    "err_ring_count": "the ring's pairs name {named} devices where the axis has "
    "{devices}: build them from the axis's size (jax.lax.axis_size), not from a "
    "number written in",
    "err_scatter_untiled": "psum_scatter without tiled=True needs the scattered "
    "axis to have exactly {count} entries, one per device; tiled=True splits an "
    "axis of {size} into blocks",
    "err_concatenate_numbers": "concatenate joins arrays along an axis they "
    "already have, and these are single numbers: stack them (np.stack) to make a "
    "new axis",
    "err_stack_shapes": "the arrays stacked differ in shape: parts of different "
    "kinds (an image and a label?) stacked together, where each kind is stacked "
    "on its own",
    "err_ragged": "an array made from items of different shapes or nested "
    "sequences: the items are not all alike (pairs to split into their parts "
    "first?)",
    "err_partial_batch": "a batch of {got} where every step takes {size}: the "
    "records ran out before the steps did (more steps than full batches: a count "
    "rounded up, or not the smallest of every process's?)",
    "err_host_rows": "this process holds {has} along dimension {dim}, but the "
    "global shape {shape} gives it {addr}: the global shape is every process's "
    "rows together (its own times the number of processes), no more",
    "reduced_axis": "the shape is that of an input reduced along axis {got}, "
    "where axis {expected} was expected: the wrong axis?",
    "array_for_number": "an array where a single number was expected: a sum, a "
    "mean or .item() left out?",
    "bool_for_number": "True/False where a number was expected: a comparison "
    "instead of a count or a value?",
    "pattern_negated": "every value has the wrong sign: a difference taken the "
    "wrong way round?",
    "pattern_offset": "every value is off by the same amount ({offset:.4g}): a "
    "constant added, or left out?",
    "pattern_offset_axis": "every slice along axis {axis} is off by the same "
    "values: a term such as a bias, a mean or a location added, or left out?",
    "pattern_rolled": "these are the expected values moved by {shift} along axis "
    "{axis} (or by {back} the other way): shifted in the wrong direction, or "
    "too far, round the ring?",
    "not_vectorized": "the traced program grows with the batch "
    "({small} operations for {n_small} examples, {large} for {n_large}): "
    "a Python loop over the examples? Use array operations or jax.vmap",
    "scanned_examples": "the traced program scans over its {n} examples one at a "
    "time (a lax.map, or a scan as long as the batch): a loop, not a batched "
    "computation; use jax.vmap or array operations",
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
    "grading_cell_error": "code cell {cell} raised {error}",
    # Every display (the check panel and the explorers).
    "kernel_gone": "The kernel restarted: run the cells above again.",
    "explorer": "explorer",
    "explorer_static": "This is a still picture of the explorer: on this page its "
                       "controls compute nothing. To try it, open the chapter as a "
                       "notebook (the rocket button at the top of the page: Binder "
                       "or Colab) and run its cells.",
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
    "one-way ring)",
    "collective_device": "device {d}: {before} -> {after}",
    "collective_more": ", ... ({n} entries)",
    "collective_text": "Collective explorer: choose a collective, the number of "
    "devices and the entries per device; every device's block before and after, "
    "the compiled collective and the bytes sent update.",
    # Chapter 8's batch-split explorer.
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
    # Chapter 9's data-parallel explorer.
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
    "grading_folder": "the grading folder",
    "grading_tamper_outside": "it tried to write outside its own folder ({path}): "
    "zero",
    "grading_tamper_changed": "the course's files changed while it ran ({files}); "
    "they were restored: zero",
    "grading_feedback_title": "Feedback: {name}",
    "grading_status": "Status: {status}",
    "grading_score": "Score: {total:g} of {count}",
    "grading_exercise": "{id}: {score:.0%}",
    "grading_borrowed_is": "borrowed the reference answer: `{name}` is the "
    "course's `{reference}`, not written in the notebook: zero",
    "grading_borrowed_calls": "borrowed the reference answer: `{name}` runs the "
    "course's `{reference}`: zero",
    "grading_borrowed_copy": "borrowed the reference answer: `{name}` is the "
    "course's `{reference}`, run from its installed file, not written in the "
    "notebook: zero",
    "grading_borrowed_library": "borrowed the reference answer: `{name}` uses "
    "the course's `{reference}`, which returns this exercise's answer: zero",
    "grading_flag_pasted": "pasted the reference answer",
    "grading_flag_same": "same answer as {others}",
    # The layout explorer (chapter 6).
    "traceback_frames_1": "1 frame inside JAX and other libraries",
    "traceback_frames_n": "{n} frames inside JAX and other libraries",
    "traceback_chain_1": "1 earlier exception raised inside them",
    "traceback_chain_n": "{n} earlier exceptions raised inside them",
    "traceback_and": " and ",
    "traceback_hidden": "[{parts} hidden; jaxcourse.tracebacks.full_tracebacks() "
                        "shows them]",
    "draw_before": "before",
    "draw_after": "after",
    "draw_device": "device",
    "draw_title_psum": "psum: every device gets the sum of all blocks",
    "draw_title_all_gather": "all_gather (tiled): every device gets all blocks, "
                             "in order",
    "draw_title_psum_scatter": "psum_scatter (tiled): device d gets piece d of the sum",
    "draw_title_all_to_all": "all_to_all (tiled): device d gets piece d of every block",
    "draw_title_ppermute": "ppermute: every device d sends its block to device "
                           "d {sign} {shift} (mod n)",
    "layout_width": "width d",
    "layout_layers": "blocks",
    "layout_batch": "global batch",
    "layout_mesh": "mesh (data×model)",
    "layout_layout": "layout",
    "layout_chip": "chip",
    "layout_params": "parameters",
    "layout_state": "training state per device (float32)",
    "layout_sent": "bytes sent per device per step (bfloat16)",
    "layout_compute": "compute time (at peak bfloat16 FLOP/s)",
    "layout_comm": "communication time (bfloat16)",
    "layout_step": "step (roofline)",
    "layout_bound_compute": "compute-bound",
    "layout_bound_comm": "communication-bound",
    "layout_fits": "fits",
    "layout_too_big": "does not fit",
    "layout_state_line": "{state} ({pct} of the chip's {hbm}: {verdict})",
    "layout_source": "From the chapter's formulas: the state at 16 bytes per "
                     "parameter (float32 with Adam), the bytes sent in bfloat16. "
                     "The chapter checks the formulas against compiled programs "
                     "of a small model.",
    "layout_compiled_memory": "compiled program (float32): memory per device",
    "layout_compiled_memory_line": "{arguments} arguments + {temp} temporaries; "
                                   "{peak} in all",
    "layout_compiled_sent": "compiled program (float32): collectives",
    "layout_compiled_sent_line": "{counts}; {sent} sent per device "
                                 "(formula: {formula})",
    "layout_source_compiled": "The rows marked \"compiled program\" come from this "
                              "step compiled for 8 simulated CPU devices from shapes "
                              "alone, in float32 (scaling.compile_from_shapes); the "
                              "others from the chapter's formulas, the bytes sent in "
                              "bfloat16. On this CPU XLA sums an FSDP gradient with an "
                              "all-reduce where the formula has a reduce-scatter.",
    "layout_not_compiled_deep": "Models of more than {layers} blocks are not "
                                "compiled here: compiling grows with the depth.",
    "layout_not_compiled_devices": "Not compiled: this kernel has fewer than 8 "
                                   "devices (call use_cpu_devices(8) first).",
    "layout_text": "Layout explorer: choose a model, a batch, a mesh of 8 devices, "
                   "a layout and a chip; see the memory per device, the bytes "
                   "sent and the roofline's step time.",
    "layout_choice": "width {width}, {layers} blocks, global batch {batch}, "
                     "mesh {mesh}, {layout}, {chip}",
    "layout_busy": "Computing for {choice}… The greyed numbers are still the "
                   "previous choice's.",
    # The transformer explorer (jaxcourse.exercises.widgets.explorers_transformer).
    "tfx_config": "config",
    "tfx_seq": "sequence length",
    "tfx_batch": "global batch (sequences)",
    "tfx_chip": "chip",
    "tfx_nodes": "nodes",
    "tfx_mesh": "mesh (FSDP×TP)",
    "tfx_precision": "precision",
    "tfx_remat": "remat policy",
    "tfx_micro": "micro-batches",
    "tfx_attention": "attention",
    "tfx_params": "parameters",
    "tfx_cluster": "cluster",
    "tfx_cluster_line": "{chips} × {chip}: {nodes} node(s) of {per}; mesh "
                        "{data}×{model}, layout {layout}",
    "tfx_state": "training state per device ({precision})",
    "tfx_state_line": "{stored} between steps; {step} during the step (with the "
                      "{dtype} copy of the weights and the gradients)",
    "tfx_activations": "activations per device (remat {remat}, micro-batches: "
                       "{micro})",
    "tfx_activations_line": "{kept} kept for the backward pass ({per_token} a token × "
                            "{tokens} tokens) + {scores} of one block's attention "
                            "scores (float32) in HBM, attention {attention}",
    "tfx_gathered": "weights gathered by FSDP during the step",
    "tfx_gathered_line": "{gathered} ({dtype}: the embedding and the output layer "
                         "whole, and one block's weights)",
    "tfx_memory": "memory per device",
    "tfx_memory_line": "{memory} ({pct} of the chip's {hbm}: {verdict})",
    "tfx_fits": "fits",
    "tfx_too_big": "does not fit",
    "tfx_sent": "bytes sent per device per step ({dtype})",
    "tfx_sent_line": "{sent} ({data} over FSDP's axis, {model} over TP's)",
    "tfx_compute": "compute time (at peak bfloat16 FLOP/s)",
    "tfx_comm": "communication time",
    "tfx_step": "step (roofline)",
    "tfx_bound_compute": "compute-bound",
    "tfx_bound_comm": "communication-bound",
    "tfx_critical": "tokens per chip per micro-batch",
    "tfx_critical_line": "{tokens} (compute-bound above {critical})",
    "tfx_compiled_memory": "compiled program: memory per device",
    "tfx_compiled_memory_line": "{arguments} arguments (formula: {formula}) + {temp} "
                                "temporaries (formula: {inside}); XLA's peak {peak}",
    "tfx_compiled_collectives": "compiled program: collectives (a loop's body once)",
    "tfx_compiled_collectives_line": "{counts} (predicted: {predicted})",
    "tfx_source": "From the chapter's formulas: the state from state_bytes and "
                  "bytes_per_param, the activations from JAX's list of saved "
                  "residuals traced from shapes, bytes and time from phase_bytes and "
                  "step_time per micro-batch.",
    "tfx_source_compiled": "The rows marked \"compiled program\" come from this step "
                           "compiled from shapes alone for simulated CPU devices "
                           "(transformer.compile_step); the others from the "
                           "chapter's formulas. The compiled temporaries hold what "
                           "the formulas count inside the step, and more: on a CPU, "
                           "XLA keeps buffers a GPU's or TPU's compiler would fuse or "
                           "reuse. A remat policy gathers the weights again for the "
                           "backward pass, so the compiled program has more "
                           "all-gathers than predicted.",
    "tfx_not_compiled_deep": "Configs of more than {layers} layers are not compiled "
                             "here: compiling grows with the depth.",
    "tfx_not_compiled_devices": "Not compiled: this kernel has fewer than {chips} "
                                "devices (call use_cpu_devices({chips}) first).",
    "tfx_not_compiled_micro": "Not compiled: transformer.compile_step compiles one "
                              "micro-batch; choose 1 micro-batch to compile.",
    "tfx_not_compiled_splash": "Not compiled: the splash kernel is compiled for a "
                               "TPU; on the simulated CPU devices Pallas would "
                               "interpret it, far too slowly. Its scores stay in the "
                               "chip's on-chip memory: none in HBM.",
    "tfx_invalid_batch": "A global batch of {batch} sequences does not split over "
                         "{data} FSDP devices × {micro} micro-batches: choose a "
                         "larger batch, fewer micro-batches or a smaller mesh.",
    "tfx_text": "Transformer explorer: choose a LLaMA-3-shaped config, a cluster, a "
                "mesh, a precision, a remat policy, micro-batches and attention's "
                "form; see the memory "
                "per device against the chip's, the bytes sent and the roofline's "
                "step time.",
    "tfx_choice": "{config}, {nodes} × {chip}, mesh {mesh}, {precision}, remat "
                  "{remat}, {micro} micro-batches, {batch} × {seq} tokens, "
                  "attention {attention}",
    "tfx_busy": "Computing for {choice}… The greyed numbers are still the previous "
                "choice's.",
    # The explorers' charts (jaxcourse.exercises.widgets.explorer_charts). Each text of
    # a chart is a whole message, so the book's editions translate it whole.
    "chart_memory_title": "Memory per device and the chip's HBM",
    "chart_time_title": "Time per step (roofline)",
    "chart_plan": "plan (formulas)",
    "chart_compiled": "compiled (XLA)",
    "chart_over": "does not fit",
    "chart_part_params": "parameters",
    "chart_part_grads": "gradients",
    "chart_part_optimizer": "optimizer (Adam)",
    "chart_part_gathered": "gathered weights",
    "chart_part_activations": "activations",
    "chart_part_scores": "attention scores (one block)",
    "chart_part_arguments": "arguments (state and batch)",
    "chart_part_temp": "temporaries",
    "chart_part_outputs": "outputs",
    "chart_part_at_peak": "other buffers at XLA's peak",
    "chart_part_compute": "compute time",
    "chart_part_comm": "communication time",
    "chart_part_step": "step (roofline)",
    # A field is followed by words, never by ".": a number has one ("80.00 GB"),
    # and the book's editions find a field's end by the text after it.
    "chart_memory_summary": "Bar chart of the memory on each device: the plan needs "
                            "{plan} ({pct} of the chip's {hbm}).",
    "chart_memory_summary_compiled": "Bar chart of the memory on each device: the "
                                     "plan needs {plan} ({pct} of the chip's {hbm}), "
                                     "the compiled program {compiled} (XLA).",
    "chart_time_summary": "Bar chart of the time per step: {compute} of computing and "
                          "{comm} of communicating, {step} in all (roofline).",
    # Chapter 10's step explorer.
    "step_before": "from",
    "step_after": "to",
    "step_source": "{kind}, measured {date} (JAX {jax}, libtpu {libtpu}).",
    "step_run": "{key}: {ms:.1f} ms a step of {tokens:,} tokens, MFU {mfu:.1%} "
    "(MaxText's count).",
    "step_refused": "{key}: refused by the compiler: its temporaries need "
    "{needed:.2f} GiB, the chip has {available:.2f} GiB.",
    "step_parts_head": "µs per token, part by part: {before}, {after}, the change.",
    "step_axis": "µs per token (the chip's trace, by part)",
    "step_unknown": "No stored run is called {key}; the runs are: {known}.",
    "step_text": "Step explorer: choose two runs measured on the chip; each is drawn "
    "as µs per token by part, with its step time and MFU.",
}
