"""The panel and the explorers: what a notebook shows.

The Check panel (:mod:`.panel`) and the chapters' explorers, each on
:mod:`.explorer_base` (one module per chapter key, ``explorers_<key>``).
Imports ipywidgets: nothing below it loads it.
"""
