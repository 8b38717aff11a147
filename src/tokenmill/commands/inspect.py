"""``tokenmill inspect PREFIX``: look inside a ``.bin``/``.idx`` store — ids, tokens and text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.store import IndexedDataset
from tokenmill.vocab.dictionary import Dictionary

_FAIRSEQ_NAME = re.compile(r"^(?:.*\.)?(?P<lang>[^.]+)$")


def _parse_range(text: str, size: int) -> range:
    match = re.fullmatch(r"\s*(-?\d*)\s*:\s*(-?\d*)\s*", text)
    if not match:
        raise click.BadParameter(f"{text!r} is not START:STOP (e.g. 100:110)", param_hint="--range")
    start = int(match.group(1)) if match.group(1) else 0
    stop = int(match.group(2)) if match.group(2) else size
    return range(*slice(start, stop).indices(size))


def _auto_dictionary(prefix: str) -> Path | None:
    """``dict.{lang}.txt`` beside a fairseq-named store ``{split}.{src}-{tgt}.{lang}``."""
    path = Path(prefix)
    match = _FAIRSEQ_NAME.match(path.name)
    candidate = path.parent / f"dict.{match.group('lang')}.txt" if match else None
    return candidate if candidate is not None and candidate.exists() else None


class _Decoder:
    """Ids to tokens (via a fairseq dictionary) and to text (via a SentencePiece model)."""

    def __init__(self, dictionary: Dictionary | None, spm_path: str | None) -> None:
        self.dictionary = dictionary
        self.spm = None
        if spm_path:
            import sentencepiece

            self.spm = sentencepiece.SentencePieceProcessor(model_file=spm_path)

    def describe(self, ids: np.ndarray) -> dict[str, object]:
        row: dict[str, object] = {"ids": [int(i) for i in ids]}
        pieces: list[str] | None = None
        if self.dictionary is not None:
            pieces = self.dictionary.decode(ids).split(" ") if len(ids) else []
            row["tokens"] = pieces
        if self.spm is not None:
            if pieces is not None:
                content = [p for p in pieces if p not in ("</s>", "<s>", "<pad>")]
                row["text"] = self.spm.decode_pieces(content)
            else:
                row["text"] = self.spm.decode([int(i) for i in ids])
        elif pieces is not None:
            row["text"] = " ".join(p for p in pieces if p not in ("</s>", "<s>", "<pad>"))
        return row


@click.command()
@click.argument("prefix")
@click.option("--index", "index", type=int, default=None, help="Show item N (negative counts from the end).")
@click.option("--range", "span", default=None, metavar="START:STOP", help="Show items START..STOP-1.")
@click.option("--dict", "dict_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="fairseq dict.txt to show tokens (default: dict.LANG.txt beside the store, if any).")
@click.option("--spm", "spm_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="SentencePiece .model to show detokenized text.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a listing.")
def inspect(prefix: str, index: int | None, span: str | None, dict_path: str | None,
            spm_path: str | None, as_json: bool) -> None:
    """Show what a token store holds: header facts, length statistics and items.

    PREFIX is the store path with or without .bin/.idx, e.g. data-bin/train.en-de.de.
    Without --index or --range the first 5 items are shown.
    """
    dataset = IndexedDataset(prefix)
    if index is not None and span is not None:
        raise click.UsageError("give --index or --range, not both")
    if index is not None:
        if not -len(dataset) <= index < len(dataset):
            raise TokenmillError(f"--index {index} is out of range: {dataset.prefix} has {len(dataset)} items")
        chosen = [index % len(dataset)]
    else:
        chosen = list(_parse_range(span, len(dataset))) if span else list(range(min(5, len(dataset))))
    auto = None if dict_path else _auto_dictionary(dataset.prefix)
    dictionary = Dictionary.load(dict_path or auto) if (dict_path or auto) else None
    decoder = _Decoder(dictionary, spm_path)
    sizes = dataset.sizes
    facts = {
        "prefix": dataset.prefix,
        "layout": dataset.layout.value,
        "dtype": str(dataset.dtype),
        "items": len(dataset),
        "tokens": dataset.num_tokens,
        "documents": None if dataset.document_indices is None else len(dataset.document_indices) - 1,
        "length": {
            "min": int(sizes.min()) if len(sizes) else 0,
            "median": float(np.median(sizes)) if len(sizes) else 0.0,
            "mean": round(float(sizes.mean()), 2) if len(sizes) else 0.0,
            "max": int(sizes.max()) if len(sizes) else 0,
        },
        "dictionary": str(dict_path or auto) if dictionary is not None else None,
    }
    items = [{"index": i, **decoder.describe(dataset[i])} for i in chosen]
    if as_json:
        click.echo(json.dumps({**facts, "shown": items}, ensure_ascii=False))
        return
    length = facts["length"]
    documents = f", {facts['documents']} documents" if facts["documents"] is not None else ""
    click.echo(f"{dataset.prefix}: {dataset.layout.value} layout, {dataset.dtype}, {len(dataset)} items, "
               f"{facts['tokens']} tokens{documents}")
    click.echo(f"lengths: min {length['min']}  median {length['median']:g}  "
               f"mean {length['mean']:g}  max {length['max']}")
    if dictionary is not None:
        click.echo(f"dictionary: {facts['dictionary']} ({len(dictionary)} entries)")
    for item in items:
        click.echo(f"[{item['index']}] ids:    {' '.join(map(str, item['ids']))}")
        if "tokens" in item:
            click.echo(f"{'':{len(str(item['index'])) + 2}} tokens: {' '.join(item['tokens'])}")
        if "text" in item:
            click.echo(f"{'':{len(str(item['index'])) + 2}} text:   {item['text']}")
