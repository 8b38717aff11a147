"""``tokenmill export tfrecord DATA_DIR OUT --problem NAME``: Tensor2Tensor's training files.

Writes ``{problem}-train-NNNNN-of-MMMMM``, ``{problem}-dev-...`` (from ``valid``) and
``{problem}-test-...`` of ``tf.train.Example`` records (int64 ``inputs`` and ``targets``, ending with
``<EOS>`` = 1), in the order T2T's ``generate_files`` + ``shuffle_dataset`` give for the same seed,
and copies the T2T subword vocabulary next to them under the name T2T's problem looks for.
TensorFlow is imported only when the command runs (``pip install tokenmill[tf]``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from tokenmill.commands.params import number
from tokenmill.errors import ConfigError
from tokenmill.export.t2t import T2T_SEED, plan_export
from tokenmill.settings import Range

POSITIVE = number(int, Range(1))
NON_NEGATIVE = number(int, Range(0))
SEED = number(int, Range(0, 2**32 - 1))


@click.group()
def export() -> None:
    """Write prepared data in another system's file format (Tensor2Tensor's TFRecords)."""


@export.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.argument("out", type=click.Path(dir_okay=True, file_okay=False))
@click.option("--problem", required=True, help="T2T problem name: the files' prefix (its registered name).")
@click.option("--train-shards", type=POSITIVE, default=100, show_default=True, help="Files for train (T2T: 100).")
@click.option("--dev-shards", type=NON_NEGATIVE, default=1, show_default=True, help="Files for valid (0: skip).")
@click.option("--test-shards", type=NON_NEGATIVE, default=1, show_default=True, help="Files for test (0: skip).")
@click.option(
    "--seed", type=SEED, default=T2T_SEED, show_default=True, help="t2t-datagen's --random_seed for the shuffle."
)
@click.option("--no-shuffle", is_flag=True, help="Keep T2T's round-robin order (no shard shuffle).")
@click.option("--vocab-name", default=None, help="Vocabulary file name [default: vocab.PROBLEM.APPROX.subwords].")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of lines.")
def tfrecord(
    directory: str,
    out: str,
    problem: str,
    train_shards: int,
    dev_shards: int,
    test_shards: int,
    seed: int,
    no_shuffle: bool,
    vocab_name: str | None,
    as_json: bool,
) -> None:
    """Write DIRECTORY (prepared with --tokenizer t2t-subword) into OUT as T2T problem files.

    Files are {problem}-{train|dev|test}-NNNNN-of-MMMMM, tf.train.Example records with int64
    inputs/targets, shuffled as t2t-datagen shuffles them, and the vocabulary copied beside them.
    """
    if vocab_name is not None and ("/" in vocab_name or vocab_name in ("", ".", "..")):
        raise ConfigError(f"--vocab-name {vocab_name!r}: give a file name, not a path")
    shards = {"train": train_shards, "valid": dev_shards, "test": test_shards}
    plan = plan_export(directory, problem, shards=shards, seed=None if no_shuffle else seed, vocab_name=vocab_name)
    if Path(out).exists() and not Path(out).is_dir():
        raise ConfigError(f"{out} is a file; OUT must be a directory (it is created when missing)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # TensorFlow's start-up notes are not ours to print
    try:
        from tokenmill.export.tfrecord import write_plan  # TensorFlow only once the input is known good
    except ModuleNotFoundError as error:
        if error.name != "tensorflow":
            raise
        raise ConfigError("tokenmill export tfrecord writes with TensorFlow: pip install tokenmill[tf]") from None
    result = write_plan(plan, out)
    if as_json:
        report = {"out": str(result.out), "problem": problem, "records": result.records, "files": result.files,
                  "vocab": result.vocab, "removed": result.removed, "seed": None if no_shuffle else seed}
        click.echo(json.dumps(report, indent=2))
        return
    for tag, names in result.files.items():
        click.echo(f"{tag:<5} {result.records[tag]:>10,} records in {len(names)} file(s): {result.out / names[0]} ...")
    for name in result.vocab:
        click.echo(f"vocab {result.out / name}")
    if result.removed:
        names = ", ".join(result.removed)
        click.echo(f"removed {len(result.removed)} file(s) of an earlier export of {problem}: {names}")
