"""``--help`` a person can read: prepare's options in sections with defaults and choices, whole
summary lines at the top level, flag names unchanged."""

from __future__ import annotations

import dataclasses
import re

import click
from click.testing import CliRunner

from tokenmill.cli import cli
from tokenmill.commands.prepare import _OPTIONS, prepare_command
from tokenmill.prepare.config import NESTED, NESTED_HELP, SETTINGS, field_help, field_sections
from tokenmill.prepare.config import SECTIONS as OPENING_FIELDS

SECTIONS = ["Inputs", "Cleaning", "Tokenizer", "Dictionaries (fairseq-preprocess names)", "Output",
            "Megatron (tools/preprocess_data.py's flags)", "Beyond one machine",
            "Many directions at once (Open-NLLB's data_bin/shardNNN layout)", "Run"]
README_FLAGS = (
    "--source-lang --target-lang --trainpref --validpref --testpref --destdir --vocab-size --character-coverage "
    "--joined-dictionary --workers --nfkc --fullwidth --filter-max-tokens --filter-max-ratio --srcdict --tgtdict "
    "--nwordssrc --nwordstgt --thresholdsrc --thresholdtgt --padding-factor --model-type --input-sentence-size "
    "--user-defined-symbols --byte-fallback --input-format --source-key --target-key --documents --layout "
    "--append-eod --eod-symbol --on-invalid-utf8 --filter-drop-empty --filter-min-chars --filter-max-chars "
    "--filter-min-tokens --filter-drop-identical --filter-max-nonletter --filter-src-script --filter-tgt-script "
    "--filter-src-lang --filter-tgt-lang --leakage --dedup --joint-spm --spm-model --tokenizer --approx-vocab-size "
    "--file-byte-budget --max-subtoken-length --align-suffix --shard-size --directions --spm-temperature "
    "--lang-token-format --retrain-tokenizer --num-shards --json-keys --force --config --quiet --json "
    "--input --output-prefix --tokenizer-type --tokenizer-model --vocab-file --merge-file"
).split()


def _help(*args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_prepare_help_has_sections_defaults_and_choices():
    text = _help("prepare")
    headings = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings == SECTIONS
    for flag in README_FLAGS:
        assert re.search(rf"(^|[ /]){re.escape(flag)}\b", text, re.M), f"{flag} is gone from prepare --help"
    assert "--input-format [text|tsv|jsonl|parquet|arrow|hf-dataset|hf-cache]" in text
    assert "--leakage [pair|source|target|either|off]" in text
    assert "--model-type [unigram|bpe|char|word]" in text and "--layout [fairseq|megatron]" in text
    assert "[default: 0.9995]" in text and "[default: 8000]" in text and "[default: --dedup]" in text
    cleaning = text.split("\nCleaning:")[1].split("\nTokenizer:")[0]
    assert "--nfkc" in cleaning and "--filter-max-ratio" in cleaning and "--leakage" in cleaning
    run = text.split("\nRun:")[1]
    assert "--workers" in run and "--force" in run and "--help" in run


def test_every_config_field_is_a_flag_in_a_section_with_help_in_one_style():
    sections = field_sections()
    assert {setting.key for setting in SETTINGS} == set(sections), "each setting has a section"
    assert SETTINGS[0].key in OPENING_FIELDS, "the first setting opens a section"
    assert set(OPENING_FIELDS) <= set(sections), "every section opens at a field"
    for option, name, _ in _OPTIONS:
        assert option.help, f"{name} has no help"
        sentence = option.help.split("  [default:")[0]
        assert sentence[0].isupper() or not sentence[0].isalpha(), sentence
        assert sentence.endswith("."), sentence
        assert option.section in SECTIONS, (name, option.section)


def test_top_level_help_shows_each_command_summary_whole():
    text = " ".join(_help().split())
    for command in ("prepare", "verify", "inspect", "batches"):
        with click.Context(cli) as ctx:
            loaded = cli.get_command(ctx, command)
        assert loaded is not None and loaded.help
        summary = " ".join(loaded.help.split("\n\n")[0].split())
        assert summary in text, command
    assert prepare_command.short_help.startswith("Clean, tokenize and binarize")
    assert "..." not in text.split("Commands:")[1]


def test_a_command_imports_only_its_own_module():
    import subprocess
    import sys

    code = ("import sys; from tokenmill.cli import main; sys.argv = ['tokenmill', 'verify', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('tokenmill.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['tokenmill.commands.verify']"


def test_every_prepare_option_has_help_from_the_fields_themselves():
    for setting in SETTINGS:
        if setting.key not in NESTED:
            assert setting.field.metadata.get("help", "").strip(), f"{setting.key} has no metadata help"
    for group, cls in NESTED.items():
        names = {f.name for f in dataclasses.fields(cls)}
        assert set(NESTED_HELP[group]) <= names, f"{group}: NESTED_HELP names fields that are gone"
        for item in dataclasses.fields(cls):  # from the table, or the field's own metadata (the bitext rules)
            assert field_help(group, item).strip(), f"{group}.{item.name} has no help"
    for param in prepare_command.params:
        assert isinstance(param, click.Option) and param.help and param.help.strip(), param.name


def test_help_is_made_without_source_files(monkeypatch):
    """A zipped or bytecode-only install has no source to read: --help must not need it."""
    import importlib
    import inspect
    import sys

    def no_source(*args, **kwargs):
        raise OSError("could not get source code")

    monkeypatch.setattr(inspect, "getsource", no_source)
    monkeypatch.setattr(inspect, "getsourcelines", no_source)
    monkeypatch.setattr(inspect, "findsource", no_source)
    fresh = importlib.reload(sys.modules["tokenmill.commands.prepare"])
    try:
        result = CliRunner().invoke(fresh.prepare_command, ["--help"], terminal_width=100)
        assert result.exit_code == 0, result.output
        assert "Output directory (fairseq's --destdir)." in result.output
        assert all(option.help for option, _, _ in fresh._OPTIONS)
    finally:
        monkeypatch.undo()
        importlib.reload(fresh)


def test_help_says_what_the_settings_do():
    text = " ".join(_help("prepare").split())
    assert "tokenizer's pieces" in text.split("--filter-min-tokens")[1].split("--filter-max-tokens")[0]
    sample = text.split("--input-sentence-size INTEGER")[1].split("[default:")[0]
    assert "reservoir" not in sample and "uniform sample" in sample


def test_bitext_rule_flags_show_their_own_metadata_help():
    text = " ".join(_help("prepare").split())
    assert "--filter-not-too-long" in text and "--clean-preset" in text and "--decontaminate-ngram" in text
    shown = text.split("--filter-not-too-long")[1].split("--filter-")[0]
    assert "bicleaner-hardrules: 1024" in shown
