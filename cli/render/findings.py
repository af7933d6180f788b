"""The checks' findings as a SARIF log on stdout (:mod:`treedyn.pipeline.sarif`), the
model files named relative to the current folder."""
import os

from treedyn.pipeline.sarif import sarif_text

from ..settings import VERSION


def print_sarif(command: str, findings: list) -> None:
    """``dyn command --format sarif``: the log of ``findings``."""
    print(sarif_text(command, findings, VERSION, os.getcwd()))
