"""Reference implementations of every exercise in the course."""
