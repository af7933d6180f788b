"""Diagnostics of a model, returned as data: the caller words and renders them.

Inertia checks, conditioning of M, self-check identities, the structure of M and why a
state is singular. Messages here are about the model and its numbers; the command line
words them for its options and files (:mod:`treedyn.cli`).
"""
