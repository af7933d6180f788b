"""The version every JSON document of ``dyn`` names: ``"schema": "treedyn.<command>/<N>"``.

A script reads the key before it reads the rest: the name says which document it is (the
command that wrote it: ``treedyn.check-inertia/1``), the number which edition of it.
The number is the document's major version and is raised (in :data:`VERSIONS`, with
docs/interface.md in the same change) only when a key is removed or renamed or a value
changes meaning, type or unit; keys added to a document do not raise it (a reader ignores
keys it does not know). One object per state in JSON Lines (inverse, forward, mass and
the state commands with ``--input``) carries no ``schema``: its keys are those of the
command's single-state document of the same version, and a line stays one result.
"""
import json

# command -> the major version of its JSON document (every one starts at 1)
VERSIONS = {command: 1 for command in (
    "info", "inverse", "forward", "mass", "check-inertia", "condition", "verify", "bench",
    "diff", "regressor", "identify", "frames", "jacobian", "com", "coriolis",
    "check-limits", "statics", "centroidal", "energy", "inertia-from-geometry")}


def schema_name(command: str) -> str:
    """``treedyn.<command>/<version>``: what a document of ``command`` says it is."""
    return f"treedyn.{command}/{VERSIONS[command]}"


def versioned(document: dict, command: str) -> dict:
    """``document`` with its ``"schema"`` key first."""
    return {"schema": schema_name(command), **document}


def document_text(document: dict, command: str) -> str:
    """The one line of JSON that ``dyn COMMAND --format json`` prints for ``document``."""
    return json.dumps(versioned(document, command))
