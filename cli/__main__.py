"""``python -m treedyn.cli``: the dyn program."""
from treedyn.cli import run

run()
