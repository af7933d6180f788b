"""A model file written again with new inertias (``dyn identify --write``, ``dyn
inertia-from-geometry --write``) and a model written in another format (``dyn convert``,
:func:`write_converted`):
the target checked up front (:func:`check_write_target`, :func:`refuse_inputs`), the file's
own text with its ``<inertial>`` elements replaced (:func:`write_changes`,
:mod:`treedyn.parsers.inertial_writer`), written beside the target, read back as ``dyn``
loads a model (:func:`load_written`) and checked, then renamed onto it
(:func:`treedyn.pipeline.paths.replace_checked`).

The notes of a model read back (what its parser read otherwise than written) go to
``notes``, a function of one line: Python's warnings unless the caller says otherwise
(``dyn`` prints them as its warnings), the temporary's name replaced by the target's."""
import os
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from treedyn.engine.analysis.identify_report import link_inertias, unmatched_body
from treedyn.parsers import ParseError
from treedyn.parsers.files import MODEL_BYTES, read_bounded
from treedyn.parsers.inertial_writer import Change, WriteError, rewrite_inertials
from treedyn.parsers.writers import convert
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.paths import replace_checked, same_file, writing

from .models import load_model, package_paths


def warn(note: str) -> None:
    """A note of a model read back, as a Python warning (the default ``notes``)."""
    warnings.warn(note, stacklevel=2)


def check_write_target(model: str, target: str, kind: str, logs) -> None:
    """--write names a new file of the model's format, not the model or the log; the model
    is a file (its text is copied), not stdin."""
    if model == "-":
        raise UsageError(f"dyn: --write {target}: the model's text is copied from its file; "
                         "give the model as a file, not stdin")
    if kind not in ("urdf", "mjcf"):
        raise UsageError(f"dyn: --write {target}: writing the inertias of an "
                         f"{kind.upper()} model is not supported (URDF and MJCF are)")
    suffix = os.path.splitext(target)[1].lower()
    wanted = (".urdf",) if kind == "urdf" else (".xml", ".mjcf")
    if suffix not in wanted:
        raise UsageError(f"dyn: --write {target}: a {kind.upper()} model is written as "
                         f"{' or '.join(wanted)}")
    logs = [logs] if isinstance(logs, str) else logs
    refuse_inputs("--write", target, [(model, "the model file")]
                  + [(log, "a log") for log in logs])
    writing(target)  # (nor any other file the run reads, nor another output)


def refuse_inputs(option: str, target: str, inputs) -> None:
    """The output ``target`` (given by ``option``) is none of ``inputs``, (path, what it
    is) pairs: a UsageError naming the one it is."""
    for other, what in inputs:
        if same_file(other, target):  # (stdin redirected from it too)
            raise UsageError(f"dyn: {option} {target} is {what}; write a new file and "
                             "review it (dyn diff)")


def write_model(model: str, target: str, result, free_flyer: bool,
                meshes: Sequence[str] = (), notes: Callable[[str], None] = warn) -> dict:
    """The model's text with the fitted bodies' <inertial> elements replaced (``result``:
    :func:`treedyn.pipeline.regression.identify_stream`'s), written to ``target`` once
    read back; {"file", "links"}."""
    loaded = result.model
    links = {link.name: link for link in loaded.description.links}
    changes = [Change(links[name], inertia) for name, inertia in
               link_inertias(loaded, result.layout, result.fit.pi, result.fit.fitted)]
    write_changes(model, target, loaded.format, changes, lambda written: read_back(
        written, result, free_flyer, target, meshes, notes))
    return {"file": target, "links": [change.link.name for change in changes]}


def write_inertias(model: str, target: str, description, results, meshes: Sequence[str] = (),
                   notes: Callable[[str], None] = warn) -> dict:
    """The new inertias of ``results`` (:func:`treedyn.parsers.geometry_inertia.
    geometry_inertias` of the URDF ``description``) into a copy of ``model``'s text at
    ``target``, once read back with every changed link's inertia; {"file", "links"}."""
    links = {link.name: link for link in description.links}
    changes = [Change(links[r.link], r.inertia) for r in results if r.inertia is not None]

    def check(written: str) -> str:
        again, problem = load_written(written, target, False, meshes, notes)
        if again is None:
            return problem
        found = {link.name: link.inertia for link in again.description.links}
        for change in changes:
            new, old = found[change.link.name].spatial(), change.inertia.spatial()
            if not np.allclose(new, old, rtol=1e-10, atol=1e-12 * np.abs(old).max()):
                return f"reading it back, link '{change.link.name}' has another inertia"
        return ""

    write_changes(model, target, "urdf", changes, check)
    return {"file": target, "links": [change.link.name for change in changes]}


def write_converted(model: str, target: str, description, free_flyer: bool = False,
                    meshes: Sequence[str] = (), notes: Callable[[str], None] = warn) -> list:
    """``description`` (read from the file ``model``) written as the model format of
    ``target``'s suffix (:func:`treedyn.parsers.writers.convert`), once the written file
    loads as ``dyn`` loads a model; ``free_flyer`` floats a URDF's root. The target is
    none of the files the model is read from. Returns the conversion's notes (what the
    format written cannot hold)."""
    refuse_inputs("-o", target, [(model, "the model file")] +
                  [(path, "a file the model is read from") for path in description.files])
    try:
        result = convert(description, os.path.splitext(target)[1], free_flyer=free_flyer,
                         source=model, packages=package_paths(meshes), output=target)
    except ParseError as error:
        raise UsageError(str(error)) from None
    replace_checked(target, result.text.encode("utf-8"), lambda written: load_written(
        written, target, False, meshes, notes)[1])
    return list(result.notes)


def write_changes(model: str, target: str, kind: str, changes: list[Change],
                  check: Callable[[str], str]) -> None:
    """The text of the file ``model`` (format ``kind``) with the <inertial> elements of
    ``changes`` replaced, written to ``target`` once ``check`` (of the written temporary:
    "" or what is wrong) accepts it."""
    try:
        data = read_bounded(model, MODEL_BYTES)
    except OSError as error:
        raise UsageError(f"{model}: cannot read ({error.strerror or error})") from None
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        new = rewrite_inertials(text, model, kind, changes)
    except WriteError as error:
        raise UsageError(str(error)) from None
    replace_checked(target, new.encode("utf-8", errors="surrogateescape"), check)


def read_back(written: str, result, free_flyer: bool, target: str,
              meshes: Sequence[str] = (), notes: Callable[[str], None] = warn) -> str:
    """"" when the file ``written`` (the temporary of ``target``) gives every fitted body
    the identified parameters (12 digits), else why not (a compiler option that rescales
    inertias, an include that is not found from the new file's folder, ...)."""
    model, problem = load_written(written, target, free_flyer, meshes, notes)
    if model is None:
        return problem
    name = unmatched_body(model, result)
    if name is None:
        return ""
    return (f"reading it back, body '{name}' does not have the identified inertia "
            "(does the compiler rescale inertias: settotalmass, boundmass, "
            "boundinertia, balanceinertia, inertiafromgeom=\"true\"?)")


def load_written(written: str, target: str, free_flyer: bool = False,
                 meshes: Sequence[str] = (), notes: Callable[[str], None] = warn):
    """(the model of the file ``written``, the temporary of ``target``, "") or (None, why
    it does not load); its notes go to ``notes``, naming ``target``."""
    try:
        model = load_model(written, free_flyer, meshes=meshes)
    except UsageError as error:
        return None, f"the written model does not load ({error})".replace(written, target)
    for note in model.description.notes:
        notes(note.replace(written, target))
    return model, ""
