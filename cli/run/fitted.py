"""``dyn identify --write``: the model file's text with the fitted inertias, written
beside its target, read back and checked, then renamed onto it."""
import contextlib
import os

from treedyn.engine.analysis.identify_report import link_inertias, unmatched_body
from treedyn.parsers.files import MODEL_BYTES, read_bounded
from treedyn.parsers.inertial_writer import Change, WriteError, rewrite_inertials
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.paths import remove_stale, same_file, temporary_name

from ..console import console, warn
from ..model import load


def check_write_target(model: str, target: str, kind: str, input_file: str) -> None:
    """--write names a new file of the model's format, not the model or the log."""
    suffix = os.path.splitext(target)[1].lower()
    wanted = (".urdf",) if kind == "urdf" else (".xml", ".mjcf")
    if suffix not in wanted:
        raise UsageError(f"dyn: --write {target}: a {kind.upper()} model is written as "
                         f"{' or '.join(wanted)}")
    for other, what in ((model, "the model file"), (input_file, "the log")):
        if other != "-" and same_file(other, target):
            raise UsageError(f"dyn: --write {target} is {what}; write a new file and "
                             "review it (dyn diff)")


def write_model(model: str, target: str, result, free_flyer: bool) -> dict:
    """The model's text with the fitted bodies' <inertial> elements replaced, written to
    ``target``; {"file", "links"}."""
    loaded = result.model
    links = {link.name: link for link in loaded.description.links}
    changes = [Change(links[name], inertia) for name, inertia in
               link_inertias(loaded, result.layout, result.fit.pi, result.fit.fitted)]
    try:
        data = read_bounded(model, MODEL_BYTES)
    except OSError as error:
        raise UsageError(f"{model}: cannot read ({error.strerror or error})") from None
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        new = rewrite_inertials(text, model, loaded.format, changes)
    except WriteError as error:
        raise UsageError(str(error)) from None
    replace_checked(target, new.encode("utf-8", errors="surrogateescape"),
                    lambda written: read_back(written, result, free_flyer))
    return {"file": target, "links": [change.link.name for change in changes]}


def replace_checked(target: str, data: bytes, check) -> None:
    """``data`` written to a temporary beside ``target`` (named as dyn's output temporaries
    are, with the model's extension, see :mod:`treedyn.pipeline.paths`), read back by ``check`` (its
    path -> a problem, or ""), then renamed onto ``target``: a file there from before is
    untouched unless the new one is complete and checked, whatever stops the run."""
    real = os.path.realpath(target)
    ending = ".part" + os.path.splitext(target)[1]
    remove_stale(real, (ending,))
    temporary = temporary_name(real, ending)
    try:
        try:
            with open(temporary, "xb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            raise UsageError(f"{target}: cannot write ({error.strerror or error})") from None
        notes: list[str] = []
        console.capture(notes)  # the written model's notes, named as the file they go to
        try:
            problem = check(temporary)
        finally:
            console.capture(None)
        for note in notes:
            warn(note.replace(temporary, target))
        if problem:
            raise UsageError(f"{target}: {problem.replace(temporary, target)}; nothing is "
                             "written")
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def read_back(target: str, result, free_flyer: bool) -> str:
    """"" when the written file gives every fitted body the identified parameters (12
    digits), else why not (a compiler option that rescales inertias, an include that is
    not found from the new file's folder, ...)."""
    try:
        written = load(target, free_flyer)
    except UsageError as error:
        return f"the written model does not load ({error})"
    name = unmatched_body(written, result)
    if name is None:
        return ""
    return (f"reading it back, body '{name}' does not have the identified inertia "
            "(does the compiler rescale inertias: settotalmass, boundmass, "
            "boundinertia, balanceinertia, inertiafromgeom=\"true\"?)")
