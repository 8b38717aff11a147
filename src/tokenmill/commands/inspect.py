"""``tokenmill inspect PREFIX``: look inside a ``.bin``/``.idx`` store — ids, tokens and text — or
list the stores of a data directory."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import sentencepiece

from tokenmill.errors import TokenmillError, load_file
from tokenmill.store import IndexedDataset
from tokenmill.store.layout import MANIFEST_NAME, SHARED_DICT, StoreName, dict_name, is_shard_name, parse_store_name
from tokenmill.store.manifest import CHECKSUM_ALGORITHM, file_checksum, read_manifest, refuse_non_manifest
from tokenmill.store.meaning import FAIRSEQ
from tokenmill.store.reader import split_prefix
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.t2t_subword import SubwordTextEncoder
from tokenmill.vocab.tokenizer import Tokenizer, load_saved, manifest_path, stable_name

_SPM_MODEL = "spm.model"
_T2T_VOCAB = "vocab.subwords"
_SPECIALS = ("</s>", "<s>", "<pad>")
_DICT_FIX = "give a fairseq dict.txt (one '<token> <count>' per line) with --dict"
_SPM_FIX = "give the SentencePiece .model the store was encoded with, with --spm"


def _parse_range(text: str, size: int) -> range:
    match = re.fullmatch(r"\s*(-?\d*)\s*:\s*(-?\d*)\s*", text)
    if not match:
        raise click.BadParameter(f"{text!r} is not START:STOP (e.g. 100:110)", param_hint="--range")
    start = int(match.group(1)) if match.group(1) else 0
    stop = int(match.group(2)) if match.group(2) else size
    chosen = range(*slice(start, stop).indices(size))
    if not chosen and size:
        raise click.BadParameter(
            f"{text.strip()} selects no items of the {size} in the store: give START:STOP with START before STOP "
            f"(negative counts from the end), e.g. 0:{min(size, 5)}", param_hint="--range"
        )
    return chosen


def _data_root(prefix: str) -> Path:
    """The prepared directory a store belongs to: its folder, or the folder above a ``shardNNN/``."""
    folder = Path(prefix).parent
    return folder.parent if is_shard_name(folder) else folder


def _check_dictionary(prefix: str, path: Path | str, dictionary: Dictionary) -> None:
    """The dictionary must be the one the directory's manifest records for the store, as ``verify`` checks
    (its size; its checksum when it is the recorded file): another run's dictionary decodes garbage."""
    root = _data_root(prefix)
    refuse_non_manifest(root)
    try:
        manifest = read_manifest(root)
    except TokenmillError:  # no manifest, or a partial one written by hand: nothing recorded to check against
        return
    meaning = manifest.stores.get(Path(prefix).relative_to(root).as_posix(), {})
    vocab = meaning.get("vocab")
    if meaning.get("vocab_kind") != FAIRSEQ or not isinstance(vocab, str):
        return
    fix = f"give the dictionary it was encoded with (--dict), or re-run tokenmill prepare; tokenmill verify {root} " \
          "checks every store"
    if len(dictionary) != meaning.get("vocab_size"):
        raise TokenmillError(
            f"{path}: {len(dictionary)} entries, but {prefix} was encoded with a vocabulary of "
            f"{meaning.get('vocab_size')} ({vocab} in {root / MANIFEST_NAME}; a dictionary from another run?): {fix}"
        )
    recorded = manifest.files.get(vocab, {}).get(CHECKSUM_ALGORITHM)
    if Path(path).resolve() == (root / vocab).resolve() and recorded and file_checksum(path) != recorded:
        raise TokenmillError(
            f"{path} is not the dictionary {root / MANIFEST_NAME} records for {prefix} (its checksum differs; a "
            f"dictionary from another run?): {fix}"
        )


def _beside(prefix: str, names: list[str]) -> Path | None:
    """The first of ``names`` in the store's folder (or, for a store in shardNNN/, the folder above)."""
    folder = Path(prefix).parent
    folders = [folder, folder.parent] if is_shard_name(folder) else [folder]
    for where in folders:
        for name in names:
            if (where / name).is_file():
                return where / name
    return None


def _side(prefix: str) -> StoreName | None:
    """The store's name read back (:mod:`tokenmill.store.layout`): a side of a pair, a plain split, or None."""
    return parse_store_name(Path(prefix).name)


def _auto_dictionary(prefix: str) -> Path | None:
    """``dict.{lang}.txt`` beside a store ``{split}.{src}-{tgt}.{lang}``; ``dict.txt`` beside a plain
    ``{split}`` store (fairseq's language-model layout)."""
    name = _side(prefix)
    if name is None:
        return None
    return _beside(prefix, [dict_name(name.lang)] if name.paired else [SHARED_DICT])


def _auto_model(prefix: str) -> Path | None:
    """``spm.{lang}.model`` or ``spm.model`` beside a ``{split}.{src}-{tgt}.{lang}`` store; ``spm.model``
    beside a plain ``{split}`` store."""
    name = _side(prefix)
    if name is None:
        return None
    return _beside(prefix, ([stable_name(_SPM_MODEL, name.lang)] if name.paired else []) + [_SPM_MODEL])


def _auto_t2t_vocab(prefix: str) -> Path | None:
    """``vocab.{lang}.subwords`` or ``vocab.subwords`` (what ``--tokenizer t2t-subword`` writes) beside a store."""
    name = _side(prefix)
    own = [stable_name(_T2T_VOCAB, name.lang)] if name is not None and name.paired else []
    return _beside(prefix, [*own, _T2T_VOCAB])


def _load_t2t_vocab(path: Path | str, label: str) -> Any:
    fix = "give the T2T vocab file the store was encoded with, with --t2t-vocab"
    return load_file(path, "a T2T subword vocab file", fix, SubwordTextEncoder.load, label=label)


def _load_dictionary(path: Path | str, label: str) -> Dictionary:
    return load_file(path, "a fairseq dictionary", _DICT_FIX, Dictionary.load, label=label)


def _load_model(path: Path | str, label: str) -> Any:
    return load_file(path, "a SentencePiece model", _SPM_FIX,
                     lambda given: sentencepiece.SentencePieceProcessor(model_file=os.fspath(given)), label=label)


@dataclass(frozen=True)
class _Decoder:
    """Ids to tokens (via a fairseq dictionary) and to text (via a SentencePiece model), or both via a
    T2T subword vocab (ids as T2T stores them: <pad>=0, <EOS>=1, no dictionary); each with the file it came from."""

    dictionary: Dictionary | None
    spm: Any
    spm_path: Path | str | None
    t2t: Any = None
    t2t_path: Path | str | None = None
    tokenizer: Tokenizer | None = None
    dictionary_path: Path | str | None = None

    @classmethod
    def find(cls, prefix: str, dict_path: str | None, spm_path: str | None, t2t_path: str | None) -> _Decoder:
        """The decoders given by flag, else those found beside the store: a fairseq dictionary (checked against
        the manifest), a SentencePiece model, a T2T vocab (only without the first two), prepare's saved tokenizer
        (only without any of them)."""
        found_dict = dict_path or _auto_dictionary(prefix)
        dictionary = _load_dictionary(found_dict, "--dict" if dict_path else "") if found_dict else None
        if dictionary is not None and found_dict is not None:
            _check_dictionary(prefix, found_dict, dictionary)
        found_model = spm_path or _auto_model(prefix)
        spm = _load_model(found_model, "--spm" if spm_path else "") if found_model else None
        found_t2t = t2t_path or (None if dictionary or spm else _auto_t2t_vocab(prefix))
        t2t = _load_t2t_vocab(found_t2t, "--t2t-vocab" if t2t_path else "") if found_t2t else None
        tokenizer = None if (dictionary or spm or t2t) else _auto_saved_tokenizer(prefix)
        return cls(dictionary, spm, found_model, t2t, found_t2t, tokenizer, found_dict)

    def facts(self) -> dict[str, object]:
        """Which decoders are used, for the JSON facts (``t2t_vocab`` and ``tokenizer`` only when used)."""
        return {
            "dictionary": str(self.dictionary_path) if self.dictionary is not None else None,
            "spm_model": str(self.spm_path) if self.spm is not None else None,
            **({"t2t_vocab": str(self.t2t_path)} if self.t2t is not None else {}),
            **({"tokenizer": str(self.tokenizer.path)} if self.tokenizer is not None else {}),
        }

    def lines(self) -> list[str]:
        """One line per decoder used, for the listing."""
        out = []
        if self.dictionary is not None:
            out.append(f"dictionary: {self.dictionary_path} ({len(self.dictionary)} entries)")
        if self.tokenizer is not None:
            out.append(f"tokenizer: {self.tokenizer.path} ({self.tokenizer.name}, {self.tokenizer.vocab_size} ids)")
        if self.spm is not None:
            out.append(f"spm model: {self.spm_path} ({self.spm.get_piece_size()} pieces)")
        if self.t2t is not None:
            out.append(f"t2t vocab: {self.t2t_path} ({self.t2t.vocab_size} subtokens)")
        return out

    def describe(self, ids: np.ndarray) -> dict[str, object]:
        row: dict[str, object] = {"ids": [int(i) for i in ids]}
        if self.tokenizer is not None:  # a store of the tokenizer's own ids (hf, tiktoken, Megatron's flags)
            self._check_ids(ids, self.tokenizer.vocab_size, self.tokenizer.path, "--dict")
            row["tokens"] = [self.tokenizer.id_to_token(int(i)) for i in ids]
            row["text"] = self.tokenizer.decode(ids)
            return row
        if self.t2t is not None:
            self._check_ids(ids, self.t2t.vocab_size, self.t2t_path, "--t2t-vocab")
            row["tokens"] = self.t2t.decode_list(ids)
            row["text"] = self.t2t.decode(ids, strip_extraneous=True)
            return row
        pieces: list[str] | None = None
        if self.dictionary is not None:
            pieces = self.dictionary.decode(ids).split(" ") if len(ids) else []
            row["tokens"] = pieces
        if self.spm is not None:
            if pieces is not None:
                row["text"] = self.spm.decode_pieces([p for p in pieces if p not in _SPECIALS])
            else:
                self._check_ids(ids, self.spm.get_piece_size(), self.spm_path, "--spm")
                row["text"] = self.spm.decode([int(i) for i in ids])
        elif pieces is not None:
            row["text"] = " ".join(p for p in pieces if p not in _SPECIALS)
        return row

    @staticmethod
    def _check_ids(ids: np.ndarray, size: int, path: Path | str | None, flag: str) -> None:
        if len(ids) and not 0 <= int(ids.min()) <= int(ids.max()) < size:
            raise TokenmillError(
                f"{path} has {size} entries but the store holds id {int(ids.max())}: the store was not encoded "
                f"with it; give the right one with {flag} (or a fairseq dictionary with --dict)"
            )


def _auto_saved_tokenizer(prefix: str) -> Tokenizer | None:
    """The tokenizer prepare saved beside a store (``tokenmill-tokenizer.json``; also above a shard folder)."""
    folder = Path(prefix).parent
    for place in (folder, folder.parent) if is_shard_name(folder) else (folder,):
        if manifest_path(place).exists():
            return load_saved(place)
    return None


def _stores(directory: Path) -> list[str]:
    """Prefixes of the ``.bin``/``.idx`` stores under ``directory`` (hidden folders skipped), sorted."""
    found = []
    for root, folders, files in os.walk(directory):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        names = set(files)
        found += [os.path.join(root, f[: -len(".idx")]) for f in sorted(files)
                  if f.endswith(".idx") and f[: -len(".idx")] + ".bin" in names]
    return sorted(found)


def _list_directory(directory: str, as_json: bool) -> None:
    prefixes = _stores(Path(directory))
    if not prefixes:
        raise TokenmillError(
            f"{directory} holds no token stores (.bin/.idx pairs); give a store prefix such as "
            f"{os.path.join(directory, 'train.en-de.de')}, or the directory tokenmill prepare wrote"
        )
    rows = []
    for prefix in prefixes:
        name = os.path.relpath(prefix, directory)
        try:
            dataset = IndexedDataset(prefix)
        except TokenmillError as error:
            rows.append({"prefix": name, "problem": str(error)})
            continue
        rows.append({"prefix": name, "layout": dataset.layout.value, "dtype": str(dataset.dtype),
                     "items": len(dataset), "tokens": dataset.num_tokens})
    if as_json:
        click.echo(json.dumps({"directory": directory, "stores": rows}, ensure_ascii=False))
        return
    click.echo(f"{directory}: {len(rows)} store{'s' if len(rows) != 1 else ''}")
    width = max(len("prefix"), *(len(str(row["prefix"])) for row in rows))
    click.echo(f"  {'prefix':<{width}}  {'layout':<8}  {'dtype':<6}  {'items':>12}  {'tokens':>14}")
    for row in rows:
        if "problem" in row:
            click.echo(f"  {row['prefix']:<{width}}  unreadable: {row['problem']}")
        else:
            click.echo(f"  {row['prefix']:<{width}}  {row['layout']:<8}  {row['dtype']:<6}  "
                       f"{row['items']:>12,}  {row['tokens']:>14,}")


@click.command()
@click.argument("prefix")
@click.option("--index", "index", type=int, default=None, help="Show item N (negative counts from the end).")
@click.option("--range", "span", default=None, metavar="START:STOP", help="Show items START..STOP-1.")
@click.option("--dict", "dict_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Fairseq dict.txt to show tokens (default: dict.LANG.txt or dict.txt beside the store).")
@click.option("--spm", "spm_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="SentencePiece .model to show text (default: spm.LANG.model or spm.model beside the store).")
@click.option("--t2t-vocab", "t2t_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="T2T subword vocab for a --tokenizer t2t-subword store (default: vocab.LANG.subwords or "
                   "vocab.subwords beside the store).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a listing.")
def inspect(prefix: str, index: int | None, span: str | None, dict_path: str | None,
            spm_path: str | None, t2t_path: str | None, as_json: bool) -> None:
    """Show what a token store holds (header facts, length statistics, items) or list a directory's stores.

    PREFIX is the store path with or without .bin/.idx, e.g. data-bin/train.en-de.de; a directory
    such as data-bin lists every store in it (prefix, layout, dtype, items, tokens). Without --index
    or --range the first 5 items are shown. The fairseq dictionary (dict.LANG.txt; dict.txt for a
    store named like train), the SentencePiece model (spm.LANG.model or spm.model) and, for T2T
    subword stores, the vocab (vocab.LANG.subwords or vocab.subwords) beside the store are found
    automatically.
    """
    if index is not None and span is not None:
        raise click.UsageError("give --index or --range, not both")
    stem = split_prefix(prefix)
    if Path(prefix).is_dir() and not Path(f"{stem}.idx").exists() and not Path(f"{stem}.bin").exists():
        flags = {"--index": index, "--range": span, "--dict": dict_path, "--spm": spm_path, "--t2t-vocab": t2t_path}
        _inspect_directory(prefix, as_json, [flag for flag, value in flags.items() if value is not None])
        return
    dataset = IndexedDataset(prefix)
    decoder = _Decoder.find(dataset.prefix, dict_path, spm_path, t2t_path)
    facts = {**_store_facts(dataset), **decoder.facts()}
    items = [{"index": i, **decoder.describe(dataset[i])} for i in _chosen(dataset, index, span)]
    if as_json:
        click.echo(json.dumps({**facts, "shown": items}, ensure_ascii=False))
        return
    length = facts["length"]
    documents = f", {facts['documents']} documents" if facts["documents"] is not None else ""
    click.echo(f"{dataset.prefix}: {dataset.layout.value} layout, {dataset.dtype}, {len(dataset)} items, "
               f"{facts['tokens']} tokens{documents}")
    click.echo(f"lengths: min {length['min']}  median {length['median']:g}  "
               f"mean {length['mean']:g}  max {length['max']}")
    for line in decoder.lines():
        click.echo(line)
    for item in items:
        click.echo(f"[{item['index']}] ids:    {' '.join(map(str, item['ids']))}")
        if "tokens" in item:
            click.echo(f"{'':{len(str(item['index'])) + 2}} tokens: {' '.join(item['tokens'])}")
        if "text" in item:
            click.echo(f"{'':{len(str(item['index'])) + 2}} text:   {item['text']}")


def _inspect_directory(directory: str, as_json: bool, given: list[str]) -> None:
    """List a directory's stores; refuse flags that need a store, and a folder that is not a data directory."""
    refuse_non_manifest(directory)  # as open, verify and report refuse it
    if given:
        verb = "needs" if len(given) == 1 else "need"
        raise click.UsageError(f"{' and '.join(given)} {verb} a store PREFIX, not the directory {directory}")
    _list_directory(directory, as_json)


def _chosen(dataset: IndexedDataset, index: int | None, span: str | None) -> list[int]:
    """The items to show: ``--index``, ``--range``, or the first five."""
    if index is not None:
        if not -len(dataset) <= index < len(dataset):
            raise TokenmillError(f"--index {index} is out of range: {dataset.prefix} has {len(dataset)} items")
        return [index % len(dataset)]
    return list(_parse_range(span, len(dataset))) if span is not None else list(range(min(5, len(dataset))))


def _store_facts(dataset: IndexedDataset) -> dict[str, Any]:
    """What the header and index say: layout, dtype, counts, length statistics."""
    sizes = dataset.sizes
    return {
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
    }

