"""One module per ``dyn`` command: its options, one call into the run layer or the
engine's analysis, and rendering. :data:`treedyn.cli.app.COMMANDS` lists them."""
