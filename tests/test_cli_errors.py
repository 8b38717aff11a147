"""A front door that never lies: every command answers bad input with exit status 2 and exactly one
``error:`` line — never a traceback.

Property tests run each command in-process (click's CliRunner) on a valid invocation with one thing
made wrong, drawn at random: a non-number or an out-of-range number for a numeric flag (the flags
and ranges come from the settings dataclasses' own type hints), an unknown choice, an unknown option,
a file that does not exist or is of the wrong kind (a dictionary given as a SentencePiece model,
binary garbage given as a dictionary or config), a YAML config with an unknown key or a value of the
wrong type. ``prepare`` never gets to run: its pipeline is replaced by one that fails the test.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.batching.corpus import make_pair_dir
from tokenmill.cli import cli
from tokenmill.prepare import PrepareConfig
from tokenmill.prepare.config import flag_name
from tokenmill.settings import Range, choices, hints
from tokenmill.store import IndexedWriter
from tokenmill.text.filters import FilterConfig
from tokenmill.text.normalize import Normalizer
from tokenmill.vocab.dictionary import Dictionary

EXAMPLES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CLASSES = [(PrepareConfig, None), (Normalizer, "normalize"), (FilterConfig, "filters")]
# what a command line can hold: no NUL, no lone surrogates
TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12)


def _base_kind(hint: typing.Any) -> typing.Any:
    """``int`` for ``Annotated[int | None, ...]``; the hint itself for anything that is not a union."""
    base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
    if isinstance(base, types.UnionType) or typing.get_origin(base) is typing.Union:
        return next(a for a in typing.get_args(base) if a is not type(None))
    return base


def _ranged() -> list[tuple[str, type, Range]]:
    """(flag, int or float, range) of every numeric setting with a range, from the type hints."""
    found = []
    for cls, group in CLASSES:
        for name, hint in hints(cls).items():
            if typing.get_origin(hint) is typing.Annotated:
                for extra in typing.get_args(hint)[1:]:
                    if isinstance(extra, Range):
                        found.append((flag_name(name, group), _base_kind(hint), extra))
    return found


def _choice_flags() -> list[tuple[str, tuple[str, ...]]]:
    return [(flag_name(name, group), found) for cls, group in CLASSES for name, hint in hints(cls).items()
            if (found := choices(hint)) is not None]


RANGED = _ranged()
CHOICES = _choice_flags()
FIELDS = {name: hint for name, hint in hints(PrepareConfig).items() if not name.startswith("_")}


def _parses(kind: type, text: str) -> bool:
    try:
        kind(text.strip())
    except ValueError:
        return False
    return True


@st.composite
def out_of_range(draw: st.DrawFn, kind: type, bound: Range) -> str:
    sides = []
    if bound.low is not None:
        if kind is int:
            sides.append(st.integers(-(10**9), int(bound.low) - (0 if bound.open_low else 1)))
        else:
            sides.append(st.floats(-1e9, bound.low, exclude_max=not bound.open_low))
    if bound.high is not None:
        sides.append(st.integers(int(bound.high) + 1, 10**9) if kind is int else
                     st.floats(bound.high, 1e9, exclude_min=True))
    return str(draw(st.one_of(*sides)))


@st.composite
def bad_number(draw: st.DrawFn) -> list[str]:
    flag, kind, bound = draw(st.sampled_from(RANGED))
    value = draw(st.one_of(
        out_of_range(kind, bound),
        TEXT.filter(lambda text: not _parses(kind, text)),
        st.just("nan") if kind is float else st.sampled_from(["1.5", "true", "1e3"]),
    ))
    return [flag, value]


@st.composite
def bad_choice(draw: st.DrawFn) -> list[str]:
    flag, options = draw(st.sampled_from(CHOICES))
    return [flag, draw(TEXT.filter(lambda text: text not in options))]


_FLAGS = {flag_name(name, group) for cls, group in CLASSES for name in hints(cls)} | {"--help", "--version"}
unknown_option = st.from_regex(r"--[a-z][a-z-]{0,14}", fullmatch=True).filter(
    lambda text: not any(flag.startswith(text) or flag.startswith("--no-" + text[2:]) for flag in _FLAGS)
)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli-errors")
    for lang in ("en", "de"):
        (root / f"t.{lang}").write_text("hello world\nsecond line\n", encoding="utf-8")
    dictionary = Dictionary.from_counts({"hello": 5, "world": 3}, padding_factor=8)
    dictionary.save(root / "dict.de.txt")
    with IndexedWriter(root / "train.en-de.de", vocab_size=len(dictionary)) as writer:
        writer.add_item(dictionary.encode_tokens(["hello", "world"]))
    (root / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (root / "fake.model").write_bytes(b"\x0a\x03abc" + bytes(range(200)))
    (root / "nocount.txt").write_text("hello\nworld there\n", encoding="utf-8")
    (root / "empty").mkdir()
    (root / "config-dir.yaml").mkdir()
    make_pair_dir(root / "pairs", 60)
    return {"root": root, "store": root / "train.en-de.de", "dict": root / "dict.de.txt", "pairs": root / "pairs"}


def _assert_one_error_line(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    shown = f"args={args!r}\noutput={result.output!r}\nexception={result.exception!r}"
    assert isinstance(result.exception, SystemExit), shown
    assert "Traceback" not in result.output, shown
    assert result.exit_code == 2, shown
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), shown


@pytest.fixture
def never_prepare(monkeypatch, tmp_path):
    """Every drawn invocation is wrong: reaching the pipeline is itself a failure."""

    def refuse(*args, **kwargs):
        raise AssertionError("bad input reached the pipeline")

    monkeypatch.setattr("tokenmill.commands.prepare.prepare", refuse)
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path / "cache"))


# ---------------------------------------------------------------- prepare
def _yaml_value_of_wrong_type(hint: typing.Any) -> list[str]:
    kind = _base_kind(hint)
    if choices(hint) is not None:
        return ['"nonsense"', "3", "true", "[a]"]
    if kind is bool:
        return ['"maybe"', "3", "[true]", "{a: 1}", "0.5"]
    if kind is int:
        return ['"eight"', "true", "1.5", "[1, 2]", "{a: 1}", '"1"']
    if kind is float:
        return ['"high"', "true", "[0.5]", "{a: 1}"]
    if kind in (Normalizer, FilterConfig):
        return ["3", "[a]", '"x"', "{bogus: 1}"]
    return ["3", "true", "{a: b}"] if kind is not str else ["3", "true", "[a, b]", "{a: b}"]


@st.composite
def bad_yaml(draw: st.DrawFn, root: Path) -> list[str]:
    """-c FILE with one bad entry (keys given as flags too are left alone: the flags win)."""
    path = root / "fuzz.yaml"
    given_as_flags = {"source_lang", "target_lang", "trainpref", "destdir"}
    kind = draw(st.sampled_from(["unknown", "type", "nested", "garbage", "not-a-mapping"]))
    if kind == "unknown":
        key = draw(st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True).filter(lambda k: k not in FIELDS))
        path.write_text(f"{key}: 1\n", encoding="utf-8")
    elif kind == "type":
        name = draw(st.sampled_from(sorted(set(FIELDS) - given_as_flags)))
        value = draw(st.sampled_from(_yaml_value_of_wrong_type(FIELDS[name])))
        path.write_text(f"{name}: {value}\n", encoding="utf-8")
    elif kind == "nested":
        group, cls = draw(st.sampled_from([("normalize", Normalizer), ("filters", FilterConfig)]))
        names = sorted(hints(cls))
        key = draw(st.one_of(st.sampled_from(names).map(lambda n: n + "x"), st.sampled_from(names)))
        value = "1" if key not in names else draw(st.sampled_from(_yaml_value_of_wrong_type(hints(cls)[key])))
        if key in names and _base_kind(hints(cls)[key]) is str and value == "[a, b]":
            value = "3"
        path.write_text(f"{group}:\n  {key}: {value}\n", encoding="utf-8")
    elif kind == "garbage":
        data = draw(st.binary(min_size=1, max_size=40).filter(_not_utf8))
        path.write_bytes(data)
    else:
        text = draw(st.text(max_size=30).filter(_yaml_not_a_mapping))
        path.write_text(text, encoding="utf-8")
    return ["-c", str(path)]


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _yaml_not_a_mapping(text: str) -> bool:
    try:
        loaded = yaml.safe_load(text.replace("\r\n", "\n").replace("\r", "\n"))  # as read back
    except yaml.YAMLError:
        return True
    return loaded is not None and not isinstance(loaded, dict)


@st.composite
def bad_prepare(draw: st.DrawFn, world: dict[str, Path]) -> list[str]:
    root = world["root"]
    base = {"--source-lang": "en", "--target-lang": "de", "--trainpref": str(root / "t"),
            "--destdir": str(root / "out")}
    missing = str(root / "does-not-exist")
    mutation = draw(st.one_of(
        bad_number(),
        bad_choice(),
        unknown_option.map(lambda option: [option]),
        st.sampled_from([
            ["--trainpref", missing], ["--validpref", f"{root / 't'},{missing}"], ["--testpref", missing],
            ["--spm-model", missing], ["--srcdict", missing], ["--tgtdict", missing], ["-c", missing],
            ["--target-lang", "en"], ["--source-lang", "de"], ["--source-lang", "e/n"], ["--target-lang", ""],
            ["--spm-model", str(world["dict"])], ["--spm-model", str(root / "garbage.bin")],
            ["--spm-model", str(root / "empty")], ["--srcdict", str(root / "fake.model")],
            ["--tgtdict", str(root / "garbage.bin")], ["--srcdict", str(root / "nocount.txt")],
            ["-c", str(root / "garbage.bin")], ["-c", str(root / "config-dir.yaml")],
            ["--input-format", "tsv", "--trainpref", str(root / "empty")], ["--align-suffix", "align"],
            ["--tokenizer", "none", "--align-suffix", "align"], ["--filter-src-script", "Klingon"],
            ["--dedup=yes"], ["--vocab-size"], ["--filter-max-chars", "2", "--filter-min-chars", "5"],
            ["--json-keys", "a,b"], ["--documents", "blank-line"], ["--directions", "eng-eng"],
            ["--lang-token-format", "no-placeholder", "--directions", "a-b"],
        ]),
        bad_yaml(root),
    ))
    args = [arg for flag, value in base.items() if flag not in mutation for arg in (flag, value)]
    return ["prepare", *args, *mutation]


@EXAMPLES
@given(data=st.data())
def test_prepare_bad_input_is_one_error_line(world, never_prepare, data):
    _assert_one_error_line(data.draw(bad_prepare(world)))


# ---------------------------------------------------------------- verify
@st.composite
def bad_verify(draw: st.DrawFn, world: dict[str, Path]) -> list[str]:
    root = world["root"]
    kind = draw(st.sampled_from(["missing", "file", "no-manifest", "bad-manifest", "option", "extra"]))
    if kind == "missing":
        return ["verify", str(root / draw(st.from_regex(r"nope[a-z]{0,8}", fullmatch=True)))]
    if kind == "file":
        return ["verify", str(world["dict"])]
    if kind == "no-manifest":
        return ["verify", str(root / "empty")]
    if kind == "option":
        return ["verify", str(world["pairs"]), draw(unknown_option)]
    if kind == "extra":
        return ["verify", str(world["pairs"]), "again"]
    folder = root / "manifests"
    folder.mkdir(exist_ok=True)
    content = draw(st.one_of(
        st.binary(max_size=40),
        st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                     max_leaves=8).map(lambda obj: json.dumps(obj).encode()),
        st.sampled_from([b'{"format": "tokenmill"}', b'{"format": "tokenmill", "files": 3, "stores": []}']),
    ))
    (folder / "manifest.json").write_bytes(content)
    return ["verify", str(folder)]


@EXAMPLES
@given(data=st.data())
def test_verify_bad_input_is_one_error_line(world, data):
    _assert_one_error_line(data.draw(bad_verify(world)))


# ---------------------------------------------------------------- inspect
_RANGE_SYNTAX = r"\s*(-?\d*)\s*:\s*(-?\d*)\s*"


@st.composite
def bad_inspect(draw: st.DrawFn, world: dict[str, Path]) -> list[str]:
    import re

    root, store = world["root"], str(world["store"])
    return draw(st.one_of(
        st.sampled_from([
            ["inspect", str(root / "nothing-here")], ["inspect", str(root / "empty")],
            ["inspect", str(root), "--index", "0"], ["inspect", str(root), "--spm", str(world["dict"])],
            ["inspect", store, "--spm", str(world["dict"])], ["inspect", store, "--spm", str(root / "garbage.bin")],
            ["inspect", store, "--spm", str(root / "fake.model")],
            ["inspect", store, "--dict", str(root / "garbage.bin")],
            ["inspect", store, "--dict", str(root / "nocount.txt")], ["inspect", store, "--dict", str(root / "empty")],
            ["inspect", store, "--t2t-vocab", str(root / "garbage.bin")],
            ["inspect", store, "--t2t-vocab", str(root / "nocount.txt")],
            ["inspect", store, "--index", "0", "--range", "0:1"], ["inspect", store, "--spm", str(root / "missing")],
            ["inspect", str(world["dict"])], ["inspect"],
        ]),
        st.integers().filter(lambda n: not -1 <= n < 1).map(lambda n: ["inspect", store, "--index", str(n)]),
        TEXT.filter(lambda t: not _parses(int, t)).map(lambda t: ["inspect", store, "--index", t]),
        TEXT.filter(lambda t: not re.fullmatch(_RANGE_SYNTAX, t)).map(lambda t: ["inspect", store, "--range", t]),
        unknown_option.map(lambda option: ["inspect", store, option]),
    ))


@EXAMPLES
@given(data=st.data())
def test_inspect_bad_input_is_one_error_line(world, data):
    _assert_one_error_line(data.draw(bad_inspect(world)))


# ---------------------------------------------------------------- batches
_BATCH_INTS = {"--max-tokens": 1, "--max-sentences": 1, "--world-size": 1, "--seed": 0, "--epoch": 1,
               "--required-batch-size-multiple": 1, "--pad-to-multiple": 1, "--max-source-positions": 1,
               "--max-target-positions": 1, "--shard": 0, "--pack-length": 1, "--virtual-size": 1,
               "--virtual-epoch-size": 1, "--upsample-primary": 1}


@st.composite
def bad_batches(draw: st.DrawFn, world: dict[str, Path], cache: Path) -> list[str]:
    root, pairs = world["root"], str(world["pairs"])
    flag = draw(st.sampled_from(sorted(_BATCH_INTS)))
    mutation = draw(st.one_of(
        st.integers(-(10**6), _BATCH_INTS[flag] - 1).map(lambda n: [flag, str(n)]),
        TEXT.filter(lambda t: not _parses(int, t)).map(lambda t: [flag, t]),
        st.floats(max_value=0).map(lambda x: ["--temperature", str(x)]),
        TEXT.filter(lambda t: not _parses(float, t)).map(lambda t: ["--temperature", t]),
        TEXT.filter(lambda t: t not in ("lowpad", "fairseq", "opennmt")).map(lambda t: ["--mode", t]),
        TEXT.filter(lambda t: t not in ("ffd", "greedy")).map(lambda t: ["--pack-strategy", t]),
        TEXT.filter(lambda t: t not in ("src", "tgt", "none")).map(lambda t: ["--encoder-langtok", t]),
        st.from_regex(r"[a-z]{1,8}", fullmatch=True).filter(lambda s: s != "train").map(lambda s: ["--split", s]),
        st.integers(1, 999).map(lambda n: ["--shard", str(n)]),
        unknown_option.map(lambda option: [option]),
        st.sampled_from([
            ["--src", "xx", "--tgt", "yy"], ["--directions", "a-b"], ["--cache-dir", str(world["dict"])],
            ["--weights", "x", "--directions", "en-de"],
        ]),
    ))
    target = draw(st.sampled_from([pairs, pairs, pairs, str(root / "empty"), str(root / "nope"), str(world["dict"])]))
    if target != pairs:
        mutation = []
    return ["batches", target, "--cache-dir", str(cache), *mutation]


@EXAMPLES
@given(data=st.data())
def test_batches_bad_input_is_one_error_line(world, data):
    cache = world["root"] / "cache"
    _assert_one_error_line(data.draw(bad_batches(world, cache)))


def test_usage_errors_are_one_error_line_pointing_at_help():
    result = CliRunner().invoke(cli, ["prepare", "--vocab-sise", "8"])
    assert result.exit_code == 2
    assert result.output.startswith("error: no such option") and "'--vocab-size'" in result.output
    assert result.output.rstrip().endswith("(see 'cli prepare --help')")
    assert result.output.count("\n") == 1
    assert CliRunner().invoke(cli, ["nosuchcommand"]).output.startswith("error: no such command 'nosuchcommand'")


def test_printed_messages_are_one_line_even_when_the_input_has_newlines(world):
    _assert_one_error_line(["prepare", "--source-lang", "a\nb", "--trainpref", str(world["root"] / "t")])
