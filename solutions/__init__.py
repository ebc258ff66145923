"""Reference implementations of every exercise in the course.

One module per topic: ``solutions/<topic>.py`` holds the reference functions
of the exercises whose ids start with ``<topic>.`` (e.g. ``mlp.relu`` lives
in :mod:`solutions.mlp`) and registers their checker specs with
:func:`jaxcourse.exercises.register` when imported; chapter 9's
Simplified-Chinese edition (``dp_zh_hans``) is registered by
:mod:`solutions.dp_zh` from a generated table of texts. :data:`TOPICS` is the
manifest through which the engine finds them. The solution notebooks
(``*_exercises.ipynb``, executed) are the masters from which
``python -m jaxcourse.exercises.authoring`` generates the student notebooks in
``exercises/``. What the exercises use besides the answers (checks, named
mistakes, cases, harnesses) is :mod:`exercise_kit`'s. See
``book/for_teachers.md``.
"""

from jaxcourse.course import Topic

#: The packages beside this one that the exercises import: their checks,
#: named mistakes, cases and harnesses (``jaxcourse.course.HELPERS_ATTRIBUTE``).
HELPER_PACKAGES = ("exercise_kit",)

#: The course's manifest, declared to the engine as the entry point
#: ``jaxcourse.course`` (see pyproject.toml): one topic per chapter, in order.
TOPICS: tuple[Topic, ...] = (
    Topic("mlp", "solutions.mlp", "book/01_mlp.ipynb",
          "solutions/01_mlp_exercises.ipynb"),
    Topic("torch_data", "solutions.torch_data", "book/02_torch_data.ipynb",
          "solutions/02_torch_data_exercises.ipynb"),
    Topic("bayes", "solutions.bayes", "book/03_bayes.ipynb",
          "solutions/03_bayes_exercises.ipynb"),
    Topic("sharding", "solutions.sharding", "book/04_sharding.ipynb",
          "solutions/04_sharding_exercises.ipynb", devices=8),
    Topic("shard_map", "solutions.shard_map", "book/05_shard_map.ipynb",
          "solutions/05_shard_map_exercises.ipynb", devices=8),
    Topic("scaling", "solutions.scaling", "book/06_scaling.ipynb",
          "solutions/06_scaling_exercises.ipynb", devices=8),
    Topic("transformer", "solutions.transformer", "book/07_transformer.ipynb",
          "solutions/07_transformer_exercises.ipynb"),
    Topic("multiprocess", "solutions.multiprocess", "book/08_multiprocess.ipynb",
          "solutions/08_multiprocess_exercises.ipynb"),
    Topic("dp_zh", "solutions.dp_zh", "book/09_dp_zh.ipynb",
          "solutions/09_dp_zh_exercises.ipynb", "zh-Hant", 8),
    Topic("dp_zh_hans", "solutions.dp_zh", "book/09_dp_zh_hans.ipynb",
          "solutions/09_dp_zh_hans_exercises.ipynb", "zh-Hans", 8),
    Topic("fast_step", "solutions.fast_step", "book/10_fast_step.ipynb",
          "solutions/10_fast_step_exercises.ipynb"),
)
