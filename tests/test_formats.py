"""Parquet and HDF5 inputs and outputs against .npz and the single-state command; the text
of JSON Lines and CSV numbers read back as the same doubles; the readers' block paths
against their line-by-line ones."""
from __future__ import annotations

import csv
import io
import json
import sys
from unittest import mock

import numpy as np
import pytest

from treedyn.engine import crba, rnea
from treedyn.parsers import load_model

from test_cli import ARM, assert_usage_error, dyn, json_lines
from test_pipelines import CHUNK, peak_rss_mb, single_taus

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
h5py = pytest.importorskip("h5py")
pd = pytest.importorskip("pandas")

COUNT = 23


@pytest.fixture(scope="module")
def arm():
    return load_model(str(ARM))


@pytest.fixture(scope="module")
def states(arm):
    rng = np.random.default_rng(12)
    return (arm.random_configuration(rng, COUNT), rng.normal(size=(COUNT, 2)),
            rng.normal(size=(COUNT, 2)))


@pytest.fixture
def small_chunks(monkeypatch):
    from treedyn.cli.run import request

    monkeypatch.setattr(request, "chunk_states", lambda command, layout: CHUNK)


def lists(values: np.ndarray, fixed: bool = True):
    """A pyarrow list array of the rows of ``values``."""
    if fixed:
        return pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), values.shape[1])
    return pa.array(values.tolist(), type=pa.list_(pa.float64()))


def write_parquet(path, q, v, a, fixed=True, row_group_size=5, **more):
    table = pa.table({"q": lists(q, fixed), "v": lists(v, fixed), "a": lists(a, fixed),
                      **more})
    pq.write_table(table, path, row_group_size=row_group_size)


def write_h5(path, q, v, a, prefix="", rows=4, **more):
    with h5py.File(path, "w") as file:
        group = file.require_group(prefix) if prefix else file
        for kind, values in (("q", q), ("v", v), ("a", a), *more.items()):
            group.create_dataset(kind, data=values, chunks=(rows, values.shape[1]),
                                 compression="gzip")


def test_parquet_and_hdf5_inputs_give_the_single_state_numbers(tmp_path, states,
                                                                small_chunks):
    """List columns (fixed-size and variable), coordinate columns, datasets at the root
    and in a group: the numbers of the single-state command, in files and on stdin."""
    q, v, a = states
    expected = single_taus(q, v, a)
    write_parquet(tmp_path / "fixed.parquet", q, v, a)
    write_parquet(tmp_path / "lists.parquet", q, v, a, fixed=False, row_group_size=3)
    frame = pd.DataFrame({"time": np.arange(COUNT) * 0.01, "q:joint1": q[:, 0],
                          "q:joint2": q[:, 1], "v0": v[:, 0], "v1": v[:, 1],
                          "a0": a[:, 0], "a1": a[:, 1]})
    frame.to_parquet(tmp_path / "columns.parquet")
    write_h5(tmp_path / "root.h5", q, v, a)
    write_h5(tmp_path / "nested.hdf5", q, v, a, prefix="data/demo_0")
    for name, extra in (("fixed.parquet", ()), ("lists.parquet", ()),
                        ("columns.parquet", ()), ("root.h5", ()),
                        ("nested.hdf5", ("--dataset-prefix", "/data/demo_0/"))):
        path = tmp_path / name
        for source, stdin in ((path, None), ("-", path.read_bytes())):
            result = dyn("inverse", ARM, "-i", source, "-f", "json", *extra, stdin=stdin)
            assert [line["tau"] for line in json_lines(result)] == expected, (name, source)
    columns = dyn("inverse", ARM, "-i", tmp_path / "columns.parquet", "-f", "json")
    assert "column 'time' not read" in columns.stderr.decode()


@pytest.mark.parametrize("suffix", [".parquet", ".h5"])
def test_outputs_read_back_as_a_user_reads_them(tmp_path, arm, states, small_chunks, suffix):
    q, v, a = states
    source = tmp_path / "states.npz"
    np.savez(source, q=q, v=v, a=a, tau=a)
    dyn("inverse", ARM, "-i", source, "-o", tmp_path / f"tau{suffix}", "--quiet")
    dyn("mass", ARM, "-i", source, "-o", tmp_path / f"M{suffix}", "--sparsity", "--quiet",
        *(("--dataset-prefix", "results/run1") if suffix == ".h5" else ()))
    if suffix == ".parquet":
        tau = np.stack(pd.read_parquet(tmp_path / "tau.parquet")["tau"].to_numpy())
        table = pq.read_table(tmp_path / "M.parquet")
        mass = np.array(table.column("M").to_pylist())
        metadata = table.schema.metadata
        assert json.loads(metadata[b"dofs"]) == ["joint1", "joint2"]
        assert json.loads(metadata[b"sparsity"]) == [[1, 1], [1, 1]]
        assert pq.ParquetFile(tmp_path / "tau.parquet").metadata.num_row_groups == 4
    else:
        with h5py.File(tmp_path / "tau.h5") as file:
            tau = file["tau"][:]
            assert [x.decode() for x in file["dofs"][:]] == ["joint1", "joint2"]
        with h5py.File(tmp_path / "M.h5") as file:
            mass = file["results/run1/M"][:]
            assert file["results/run1/sparsity"][:].tolist() == [[1, 1], [1, 1]]
    np.testing.assert_array_equal(tau, rnea(arm, q, v, a))
    np.testing.assert_allclose(mass, crba(arm, q), rtol=1e-13, atol=1e-13)
    with np.load(source) as saved:  # the same numbers as .npz -> .npz
        dyn("inverse", ARM, "-i", source, "-o", tmp_path / "tau.npz")
        np.testing.assert_array_equal(np.load(tmp_path / "tau.npz")["tau"], tau)
        assert saved["q"].shape == q.shape


@pytest.mark.parametrize("suffix", [".parquet", ".h5"])
def test_a_bad_row_stops_the_run_after_the_rows_before_it(tmp_path, states, small_chunks,
                                                          suffix):
    q, v, a = (x.copy() for x in states)
    source = tmp_path / f"bad{suffix}"
    if suffix == ".parquet":  # a null list: a missing state
        values = q.tolist()
        values[10] = None
        table = pa.table({"q": pa.array(values, type=pa.list_(pa.float64())),
                          "v": lists(v), "a": lists(a)})
        pq.write_table(table, source, row_group_size=4)
        message = "state 10: q is missing (null)"
    else:
        v[10, 1] = np.nan
        write_h5(source, q, v, a)
        message = "v[10] holds a non-finite number"
    for output in ("out.jsonl", f"out{suffix}"):
        target = tmp_path / output
        kept = target.with_name(f"out.partial{target.suffix}")
        assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                           f"bad{suffix}: {message}", f"the 10 states before it are in {kept}")
        assert not target.exists()
        if output.endswith(".jsonl"):
            assert len(kept.read_text().splitlines()) == 10
        elif suffix == ".parquet":
            assert len(pq.read_table(kept)) == 10
        else:
            with h5py.File(kept) as file:
                assert file["tau"].shape == (10, 2)


def test_wrong_lengths_and_missing_groups_are_one_line(tmp_path, states):
    q, v, a = states
    short = pa.array([row[:1] for row in q.tolist()], type=pa.list_(pa.float64()))
    pq.write_table(pa.table({"q": short}), tmp_path / "short.parquet")
    assert_usage_error(dyn("inverse", ARM, "-i", tmp_path / "short.parquet", check=False),
                       "short.parquet: state 0: q has 1 number, model two_link_arm needs nq=2")
    pq.write_table(pa.table({"q": lists(np.zeros((3, 3)))}), tmp_path / "wide.parquet")
    assert_usage_error(dyn("inverse", ARM, "-i", tmp_path / "wide.parquet", check=False),
                       "wide.parquet: column q holds lists of 3")
    write_h5(tmp_path / "nested.h5", q, v, a, prefix="data/demo_0")
    assert_usage_error(dyn("inverse", ARM, "-i", tmp_path / "nested.h5", check=False),
                       "nested.h5: has none of the datasets q, v, a")
    assert_usage_error(dyn("inverse", ARM, "-i", tmp_path / "nested.h5", "--dataset-prefix",
                           "data/demo_1", check=False), "has no group 'data/demo_1'")
    assert_usage_error(dyn("inverse", ARM, "--q", "0,0", "--dataset-prefix", "x",
                           check=False), "--dataset-prefix")
    (tmp_path / "text.h5").write_text("not HDF5\n")
    assert_usage_error(dyn("inverse", ARM, "-i", tmp_path / "text.h5", check=False),
                       "text.h5: not a readable HDF5 file")


def test_unread_datasets_and_columns_are_named_in_one_warning(tmp_path, states):
    q, v, a = states
    write_h5(tmp_path / "more.h5", q, v, a, obs=np.zeros((COUNT, 5)), act=np.zeros((COUNT, 2)))
    warnings = dyn("inverse", ARM, "-i", tmp_path / "more.h5", "-f", "json").stderr.decode()
    assert warnings.count("\n") == 1 and "datasets 'act', 'obs' not read" in warnings
    write_parquet(tmp_path / "more.parquet", q, v, a, episode=pa.array(np.zeros(COUNT)))
    warnings = dyn("inverse", ARM, "-i", tmp_path / "more.parquet", "-f", "json"
                   ).stderr.decode()
    assert warnings.count("\n") == 1 and "column 'episode' not read" in warnings


@pytest.mark.parametrize("suffix, module, extra", [(".parquet", "pyarrow", "arrow"),
                                                   (".h5", "h5py", "hdf5")])
def test_a_missing_extra_is_one_line(tmp_path, states, suffix, module, extra):
    """Without the library, reading or writing the format says how to install it; no file
    is left behind."""
    q, v, a = states
    np.savez(tmp_path / "states.npz", q=q, v=v, a=a)
    hidden = {name: None for name in list(sys.modules) if name.split(".")[0] == module}
    hidden[module] = None
    with mock.patch.dict(sys.modules, hidden):
        for args in (["-i", tmp_path / f"states{suffix}"],
                     ["-i", tmp_path / "states.npz", "-o", tmp_path / f"out{suffix}"]):
            line = assert_usage_error(dyn("inverse", ARM, *args, check=False),
                                      f"pip install 'treedyn[{extra}]'")
            assert line.startswith("dyn: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["states.npz"]


@pytest.mark.parametrize("suffix", [".parquet", ".h5"])
def test_an_output_appears_only_once_complete(tmp_path, states, suffix):
    """Written beside its name: a failed run leaves the file from before as it was."""
    q, v, a = (x.copy() for x in states)
    target = tmp_path / f"out{suffix}"
    target.write_bytes(b"yesterday")
    q[0, 0] = np.nan
    np.savez(tmp_path / "bad.npz", q=q, v=v, a=a)
    assert_usage_error(dyn("inverse", ARM, "-i", tmp_path / "bad.npz", "-o", target,
                           check=False), "q[0] holds a non-finite number")
    assert target.read_bytes() == b"yesterday"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npz", target.name]


def test_numbers_print_as_the_shortest_text_of_the_same_double():
    """Every double of many magnitudes (and the extremes) reads back exactly from the text
    of JSON Lines and CSV; the text has repr's digits, in orjson's form."""
    import io

    from treedyn.pipeline.sinks import CsvSink, JsonSink

    rng = np.random.default_rng(3)
    values = rng.normal(size=(500, 4)) * 10.0 ** rng.integers(-320, 300, size=(500, 4))
    values[0] = [5e-324, 1.7976931348623157e308, -0.0, 1e-5]
    values[1] = [0.1, 1e16, 123456789012345678.0, 2.5e-7]
    csv_text = CsvSink(io.StringIO(), None).text(values)
    parsed = np.array([[float(x) for x in row.split(",")] for row in csv_text.splitlines()])
    assert np.array_equal(parsed, values) and np.array_equal(np.signbit(parsed),
                                                             np.signbit(values))
    json_text = JsonSink(io.StringIO(), "tau").text(values)
    assert np.array_equal([json.loads(line)["tau"] for line in json_text.splitlines()], values)
    for row, line in zip(values, csv_text.splitlines()):
        for x, text in zip(row, line.split(",")):
            assert _digits(text) == _digits(repr(float(x))), (text, repr(x))
    assert json_text.splitlines()[0].startswith('{"tau": [5e-324, 1.7976931348623157e+308, ')


def test_a_json_line_is_the_document_it_is_given():
    """JsonSink writes the keys it is given in their order, the result at its key's place
    (a document's builder, not the sink, puts its "schema" first)."""
    import io

    from treedyn.pipeline.sinks import JsonSink

    given = {"name": "x", "tau": None, "dofs": ["a", "b"]}
    text = JsonSink(io.StringIO(), "tau", given).text(np.array([[1.0, 2.0]]))
    assert text == json.dumps({**given, "tau": [1.0, 2.0]}) + "\n"


def _digits(text: str) -> str:
    """The significant digits of a number's text."""
    mantissa = text.lower().split("e")[0].lstrip("-").replace(".", "")
    return mantissa.strip("0") or "0"


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_blocks_read_as_lines_do(tmp_path, states, suffix):
    """A block the fast path refuses (a true, a named joint), or reads apart from the rest
    (a quoted cell), gives the numbers of the line by line path."""
    q, v, a = states
    if suffix == ".jsonl":
        lines = [json.dumps({"q": q[k].tolist(), "v": v[k].tolist(), "a": a[k].tolist()})
                 for k in range(COUNT)]
        lines[3] = json.dumps({"q": {"joint1": q[3, 0], "joint2": q[3, 1]},
                               "v": v[3].tolist(), "a": a[3].tolist(), "done": True})
    else:
        lines = ["q0,q1,v0,v1,a0,a1"] + [",".join(repr(float(x)) for x in (*q[k], *v[k], *a[k]))
                                         for k in range(COUNT)]
        lines[4] = '"' + lines[4].replace(",", '",', 1)  # "q0",q1,...
    path = tmp_path / f"states{suffix}"
    path.write_text("\n".join(lines) + "\n")
    result = dyn("inverse", ARM, "-i", path, "-f", "json")
    assert [line["tau"] for line in json_lines(result)] == single_taus(q, v, a)


@pytest.fixture
def typed_blocks(monkeypatch):
    """Records what simdjson's reader of JSON Lines blocks gave (arrays, or None: refused)."""
    from treedyn.pipeline import jsonl

    read = []
    original = jsonl._typed_arrays
    monkeypatch.setattr(jsonl, "_typed_arrays", lambda *args: read.append(original(*args))
                        or read[-1])
    return read


def jsonl_text(q, v, a) -> list[str]:
    return [json.dumps({"q": q[k].tolist(), "v": v[k].tolist(), "a": a[k].tolist()})
            for k in range(len(q))]


JSON_SPELLINGS = ["2", "-0", "-0.0", "1E+02", "2.5e-3", "0.1e-400", "9007199254740993",
                  "4.9e-324", "0." + "0" * 30 + "1", "-9223372036854775808"]


def test_simdjson_reads_jsonl_blocks_as_the_command_line_does(tmp_path, states, small_chunks,
                                                               typed_blocks):
    """Blocks of vectors only go through simdjson, whatever the keys' order and the numbers'
    spelling: the numbers are those the standard library reads, bit for bit."""
    q, v, a = (vectors.copy() for vectors in states)
    lines = jsonl_text(q, v, a)
    for k, word in enumerate(JSON_SPELLINGS):  # spellings of v0 in the first lines
        v[k, 0] = float(json.loads(word))  # (JSON's -0 is the integer 0)
        lines[k] = '{"q": %s, "v": [%s, %r], "a": %s}' % (
            json.dumps(q[k].tolist()), word, float(v[k, 1]), json.dumps(a[k].tolist()))
    lines[12] = json.dumps({"a": a[12].tolist(), "q": q[12].tolist(), "v": v[12].tolist()})
    path = tmp_path / "states.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = dyn("inverse", ARM, "-i", path, "-f", "json")
    assert [line["tau"] for line in json_lines(result)] == single_taus(q, v, a)
    assert len(typed_blocks) == -(-COUNT // CHUNK) and all(b is not None for b in typed_blocks)


def test_simdjson_reads_lines_with_keys_it_does_not_use(tmp_path, states, small_chunks,
                                                       typed_blocks):
    """A key dyn does not read ("time", as a logger writes it) keeps the lines on
    simdjson's path: the numbers and the one warning are those of the line by line path."""
    q, v, a = states
    lines = [json.dumps({"time": k / 100, "q": q[k].tolist(), "v": v[k].tolist(),
                         "a": a[k].tolist(), "note": "ok"}) for k in range(COUNT)]
    path = tmp_path / "states.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = dyn("inverse", ARM, "-i", path, "-f", "json")
    assert [line["tau"] for line in json_lines(result)] == single_taus(q, v, a)
    assert len(typed_blocks) == -(-COUNT // CHUNK) and all(b is not None for b in typed_blocks)
    assert result.stderr.decode().count("not read") == 2  # "note" and "time", once each


def test_without_simdjson_orjson_reads_every_block(tmp_path, states, small_chunks,
                                                   typed_blocks, monkeypatch):
    """Where pysimdjson is not installed (a Python it has no wheel for), the same states read
    through orjson give the same numbers."""
    from treedyn.pipeline import jsonl

    monkeypatch.setattr(jsonl, "simdjson", None)
    q, v, a = states
    path = tmp_path / "states.jsonl"
    path.write_text("\n".join(jsonl_text(q, v, a)) + "\n")
    result = dyn("inverse", ARM, "-i", path, "-f", "json")
    assert [line["tau"] for line in json_lines(result)] == single_taus(q, v, a)
    assert typed_blocks == []


TYPED_REFUSED = {  # a line simdjson's reader must leave to orjson, and why
    "nested": '{"q": [[0.1], [0.2]], "v": [0, 0], "a": [0, 0]}',  # it would flatten them
    "twice": '{"q": [9, 9], "v": [0, 0], "a": [0, 0], "q": [0.1, 0.2]}',  # the last one counts
    "true": '{"q": [true, 0.2], "v": [0, 0], "a": [0, 0]}',
    "text": '{"q": ["0.1", 0.2], "v": [0, 0], "a": [0, 0]}',
    "null": '{"q": [null, 0.2], "v": [0, 0], "a": [0, 0]}',
    "big": '{"q": [100000000000000000000000000, 0.2], "v": [0, 0], "a": [0, 0]}',
    "short": '{"q": [0.1], "v": [0, 0], "a": [0, 0]}',
    "missing": '{"q": [0.1, 0.2], "v": [0, 0]}',
    "other key": '{"q": [0.1, 0.2], "v": [0, 0], "a": [0, 0], "time": [1.5]}',
    "object": '{"q": {"joint1": 0.1}, "v": [0, 0], "a": [0, 0]}',
    "scalar tau": '{"q": [0.1, 0.2], "v": [0, 0], "a": [0, 0], "tau": 1}',
    "not an object": '[0.1, 0.2]',
    "NaN": '{"q": [NaN, 0.2], "v": [0, 0], "a": [0, 0]}',
    "too large": '{"q": [1e400, 0.2], "v": [0, 0], "a": [0, 0]}',
    "trailing": '{"q": [0.1, 0.2], "v": [0, 0], "a": [0, 0]} x',
    "two": '{"q": [0.1, 0.2], "v": [0, 0], "a": [0, 0]}{"q": [0, 0]}',
}


@pytest.mark.parametrize("case", TYPED_REFUSED)
def test_a_line_simdjson_refuses_reads_as_orjson_reads_it(tmp_path, states, small_chunks,
                                                         typed_blocks, monkeypatch, case):
    """A line among good ones that simdjson's reader refuses (or would misread) sends its
    block to orjson: the output, the warnings and the error are those of dyn without it."""
    from treedyn.pipeline import jsonl

    q, v, a = states
    lines = jsonl_text(q, v, a)
    lines[9] = TYPED_REFUSED[case]  # in the second block
    path = tmp_path / "states.jsonl"
    path.write_text("\n".join(lines) + "\n")
    typed = dyn("inverse", ARM, "-i", path, "-f", "json", check=False)
    assert typed_blocks[1] is None and all(b is not None for b in typed_blocks[:1])
    monkeypatch.setattr(jsonl, "_typed_arrays", lambda *args: None)
    plain = dyn("inverse", ARM, "-i", path, "-f", "json", check=False)
    assert (typed.returncode, typed.stdout, typed.stderr) == (
        plain.returncode, plain.stdout, plain.stderr)
    if case == "twice":  # as json reads it: the last value of a key
        assert json_lines(typed)[9]["tau"] == single_taus(np.array([[0.1, 0.2]]),
                                                           np.zeros((1, 2)), np.zeros((1, 2)))[0]


SPELLINGS = ["1", "+1.5", " -0.25", "2.5e-3 ", ".5", "5.", "1E+02", "00.5", "0.1e-400"]
REFUSED = ["1_000", "0x10", "1e", "1d5", "--1", "", "nan", "inf", "NA", "null", "N/A",
           "\uff11", "1 2", "true", "1,5"]  # (the last: a row of 7 fields)


@pytest.fixture
def arrow_reads(monkeypatch):
    """CSV files read by pyarrow's threads whatever their size; what each read returned
    (None: the whole file; else the rows given before it refused)."""
    from treedyn.pipeline import csvfile

    monkeypatch.setattr(csvfile, "ARROW_BYTES", 0)
    read = []
    original = csvfile._arrow_rows

    def recorded(*args):
        read.append((yield from original(*args)))
        return read[-1]

    monkeypatch.setattr(csvfile, "_arrow_rows", recorded)
    return read


def test_pyarrow_reads_csv_as_the_command_line_does(tmp_path, states, small_chunks,
                                                    arrow_reads):
    """A large CSV file goes through pyarrow's threads, to its end: the numbers of every
    spelling a finite decimal takes are those of the command line, the foreign column is
    skipped, and line ends may be CRLF."""
    q, v, a = states
    rows = [",".join(repr(float(x)) for x in (*q[k], *v[k])) + ",x," + repr(float(a[k, 0]))
            + "," + repr(float(a[k, 1])) for k in range(COUNT)]
    for k, word in enumerate(SPELLINGS):  # spellings of q0 in the first rows
        q[k, 0] = float(word)
        rows[k] = word + rows[k][rows[k].index(","):]
    path = tmp_path / "states.csv"
    path.write_text("q0,q1,v0,v1,note,a0,a1\n" + "\r\n".join(rows) + "\n")
    result = dyn("inverse", ARM, "-i", path, "-f", "json")
    assert [line["tau"] for line in json_lines(result)] == single_taus(q, v, a)
    assert arrow_reads == [None]


@pytest.mark.parametrize("bad", ["cell", "nan", "fields", "blank", "quote", "none", "cr",
                                 "long"])
def test_pyarrow_and_no_pyarrow_give_the_same_numbers_and_error(tmp_path, small_chunks,
                                                                monkeypatch, arrow_reads,
                                                                bad):
    """pyarrow's threads read whole chunks of a file, then, where it refuses (a bad cell or
    row, a blank line, a quote), the path that locates errors reads on: the same output and
    the same error line as without pyarrow at all. (A block refused as it is read may stop
    pyarrow a few blocks early: it reads ahead; 100 blocks come before this one.)"""
    from treedyn.pipeline import csvfile

    monkeypatch.setattr(csvfile, "ARROW_BLOCK", 1500)  # batches of about 20 rows
    limit = csv.field_size_limit(400)  # ("long": a cell of 452 characters, over csv's limit)
    rows = [",".join(map(repr, r)) for r in np.random.default_rng(4).uniform(
        -2, 2, size=(2000, 6)).tolist()]
    cells = rows[1500].split(",")  # line 1504
    cells[3] = {"cell": "1_0", "nan": "nan", "fields": "1,2", "blank": cells[3],
                "quote": '"1.5"', "none": cells[3], "cr": "1_0", "long": "0." + "1" * 450}[bad]
    rows[1500] = ",".join(cells) + ("\n" if bad == "blank" else "")
    end = "\r" if bad == "cr" else "\n"  # (lines that end in a carriage return alone)
    path = tmp_path / "states.csv"
    path.write_text(f"{end}{end}q0,q1,v0,v1,a0,a1{end}" + end.join(rows) + end, newline="")
    outcomes = []
    try:
        for arrow in (csvfile._arrow_csv, lambda: None):  # pyarrow's threads, none
            monkeypatch.setattr(csvfile, "_arrow_csv", arrow)
            target = tmp_path / "out.csv"
            result = dyn("inverse", ARM, "-i", path, "-o", target, check=False)
            written = target if result.returncode == 0 else tmp_path / "out.partial.csv"
            outcomes.append((result.returncode, result.stderr, written.read_bytes()))
            written.unlink()
    finally:
        csv.field_size_limit(limit)
    assert outcomes[0] == outcomes[1]
    given = arrow_reads[0]
    if bad == "none":
        assert given is None and outcomes[0][0] == 0
        assert len(outcomes[0][2].splitlines()) == 2001
        return
    assert given is not None and 0 < given <= 1500 and given % CHUNK == 0
    if bad in ("cell", "nan", "fields", "cr", "long"):
        problem = {"cell": "column 'v1': '1_0'", "nan": "column 'v1': 'nan'",
                   "fields": "7 fields, the header has 6", "cr": "column 'v1': '1_0'",
                   "long": "not readable as CSV (field larger than field limit (400))"}[bad]
        assert outcomes[0][0] == 2 and f"states.csv:1504: {problem}" in result.stderr.decode()
    else:  # a blank line, a quoted cell: read on by the other path
        assert outcomes[0][0] == 0 and len(outcomes[0][2].splitlines()) == 2001


@pytest.mark.parametrize("arrow_bytes", [0, 1 << 60])  # pyarrow, loadtxt
def test_quoted_cells_take_the_fast_path(tmp_path, states, small_chunks, monkeypatch,
                                         arrow_bytes):
    """Every cell quoted (csv.QUOTE_ALL, as some tools write) is read by loadtxt's blocks,
    pyarrow installed or not, with the numbers of the command line; a quoted cell that
    holds a line end sends the rest of the file to csv, which names its bad cell."""
    from treedyn.pipeline import csvfile

    monkeypatch.setattr(csvfile, "ARROW_BYTES", arrow_bytes)
    read = []
    original = csvfile._CsvConverter.block
    monkeypatch.setattr(csvfile._CsvConverter, "block",
                        lambda self, *args: read.append(original(self, *args)) or read[-1])
    q, v, a = states
    text = io.StringIO()
    writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["q0", "q1", "v0", "v1", "a0", "a1"])
    writer.writerows([repr(float(x)) for x in (*q[k], *v[k], *a[k])] for k in range(COUNT))
    path = tmp_path / "states.csv"
    path.write_text(text.getvalue())
    result = dyn("inverse", ARM, "-i", path, "-f", "json")
    assert [line["tau"] for line in json_lines(result)] == single_taus(q, v, a)
    assert len(read) == -(-COUNT // CHUNK) and all(b is not None for b in read)
    lines = text.getvalue().splitlines()
    lines[15] = lines[15].replace('"', '"x\n', 1)  # line 16's first cell: x, a line end, q0
    path.write_text("\n".join(lines) + "\n")
    result = dyn("inverse", ARM, "-i", path, "-f", "json", check=False)
    assert result.returncode == 2 and len(json_lines(result)) == 14
    assert "states.csv:16: column 'q0': 'x\\n" in result.stderr.decode()


@pytest.mark.parametrize("word", REFUSED)
def test_a_cell_pyarrow_refuses_is_named_as_without_it(tmp_path, states, small_chunks,
                                                       monkeypatch, word):
    """Every cell that is not a finite plain decimal stops the run at its line and column
    with the same message and the same states written, with pyarrow or without it."""
    from treedyn.pipeline import csvfile

    q, v, a = states
    rows = [",".join(repr(float(x)) for x in (*q[k], *v[k], *a[k])) for k in range(COUNT)]
    cells = rows[12].split(",")
    cells[3] = word
    rows[12] = ",".join(cells)  # line 14: in the second chunk
    path = tmp_path / "states.csv"
    path.write_text("q0,q1,v0,v1,a0,a1\n" + "\n".join(rows) + "\n", encoding="utf-8")
    outcomes = []
    for size in (1 << 60, 0):  # loadtxt only, then pyarrow first
        monkeypatch.setattr(csvfile, "ARROW_BYTES", size)
        target = tmp_path / f"out{size}.csv"
        partial = tmp_path / f"out{size}.partial.csv"  # the states before the bad one
        result = dyn("inverse", ARM, "-i", path, "-o", target, check=False)
        outcomes.append((result.returncode, result.stderr.decode().replace(
            str(partial), "P").replace(str(target), "O"), partial.read_text()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 2 and "states.csv:14: " in outcomes[0][1]
    assert ("7 fields, the header has 6" if "," in word else "column 'v1'") in outcomes[0][1]


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss units are Linux's")
@pytest.mark.parametrize("suffix", [".parquet", ".h5"])
def test_memory_does_not_grow_with_the_input(tmp_path, suffix):
    """2.4M states in the same peak RSS as 600k, in and out: read and written a chunk of
    rows at a time (600k: enough chunks for HDF5's chunk caches and the allocator to have
    reached their plateau, about 35 MB over a file of two chunks, the same at 4.8M)."""
    rows = np.random.default_rng(5).uniform(-1, 1, size=(1000, 6))
    small, large = tmp_path / f"small{suffix}", tmp_path / f"large{suffix}"
    for path, count in ((small, 600_000), (large, 2_400_000)):
        states = np.tile(rows, (count // 1000, 1))
        q, v, a = states[:, :2], states[:, 2:4], states[:, 4:]
        if suffix == ".parquet":
            write_parquet(path, q, v, a, row_group_size=100_000)
        else:  # (HDF5 keeps an index of a dataset's chunks: of a fixed size per chunk)
            write_h5(path, q, v, a, rows=16384)
    out = tmp_path / f"tau{suffix}"
    base = peak_rss_mb(["inverse", str(ARM), "-i", str(small), "-o", str(out)])
    peak = peak_rss_mb(["inverse", str(ARM), "-i", str(large), "-o", str(out)])
    if suffix == ".parquet":
        assert pq.ParquetFile(out).metadata.num_rows == 2_400_000
    else:
        with h5py.File(out) as file:
            assert file["tau"].shape == (2_400_000, 2)
    assert peak < base + 16, (base, peak)
