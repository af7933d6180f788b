"""The fast batched path of RNEA, CRBA and ABA: many states at once, component-major.

* :mod:`.plan` -- per-model constants (internal frames, groups of one level and joint kind);
* :mod:`.spin` -- symmetric 6x6 matrices as 21 spin coordinates;
* :mod:`.threads` -- settings (:func:`~.threads.configure`), chunk sizes, the thread pool;
* :mod:`.memory` -- per-thread work arrays;
* :mod:`.rows` -- component-major row operations (gather, accumulate, rotations, shifts);
* :mod:`.sincos` -- table-based sin/cos of the joint angles;
* :mod:`.load` -- a chunk's inputs into the internal layout and results back;
* :mod:`.sweeps` -- what RNEA and ABA share (the chunked call, the forward sweep).

The algorithms' entry points are :mod:`treedyn.engine.rnea`, :mod:`~treedyn.engine.crba`
and :mod:`~treedyn.engine.aba`; :mod:`treedyn.engine.reference` computes the same one
state at a time, as the textbook writes it.
"""
