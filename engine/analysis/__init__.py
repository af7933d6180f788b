"""Diagnostics as data: inertia checks, conditioning of M, self-check identities.

Messages here are about the model and its numbers; the command line words them for its
options and files (:mod:`treedyn.cli`).
"""
