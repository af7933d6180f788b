"""Diagnostics of a model, returned as data: the caller words and renders them."""
