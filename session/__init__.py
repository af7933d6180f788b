"""What a run takes from outside the numbers, for ``dyn`` and Python programs alike.

The settings the environment gives (:mod:`.environment`: the ``TREEDYN_*`` counts, worker
processes, where ROS packages and SDFormat models are, what xacro's ``$(env)`` reads), a
model loaded as ``dyn`` loads it (:mod:`.models`: a file or stdin's bytes, xacro
arguments, those search paths, mimic joints enforced, every problem one
:class:`~treedyn.pipeline.errors.UsageError` line), and a model file written again with new
inertias, read back before it replaces its target (:mod:`.fitted`).

A layer over the pipeline, the parsers and the engine, which read no environment: this
one reads it for them and passes it in as arguments. Only the command line imports it,
and importing it loads nothing heavy.
"""
