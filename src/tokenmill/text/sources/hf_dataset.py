"""Folders written by ``datasets.save_to_disk``: ``state.json`` lists the ``data-*.arrow`` files (Arrow streams).

Read without importing ``datasets``: the folder's files are read as format ``arrow`` in the order
``state.json`` gives. A ``DatasetDict`` folder (``dataset_dict.json`` and one folder per split) is one
error naming its splits: give the split's folder.
"""

from __future__ import annotations

import json
import os

from tokenmill.errors import TokenmillError

STATE = "state.json"
INFO = "dataset_info.json"
DICT = "dataset_dict.json"


def is_saved_dataset(path: str) -> bool:
    """Whether ``path`` is a folder ``save_to_disk`` wrote (one dataset, or a ``DatasetDict`` of splits)."""
    has = lambda name: os.path.isfile(os.path.join(path, name))  # noqa: E731
    return (has(STATE) and has(INFO)) or has(DICT)


def _read_json(path: str) -> object:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise TokenmillError(f"{path}: cannot read it as JSON ({error}); the dataset folder is damaged") from None


def data_files(folder: str) -> list[str]:
    """The Arrow files of a saved dataset, in its row order."""
    if os.path.isfile(os.path.join(folder, DICT)):
        splits = _read_json(os.path.join(folder, DICT))
        names = splits.get("splits", []) if isinstance(splits, dict) else []
        raise TokenmillError(
            f"{folder}: holds a DatasetDict (splits: {', '.join(map(str, names)) or '?'}); give one split's folder, "
            f"e.g. {os.path.join(folder, str(names[0]) if names else 'train')}"
        )
    state = _read_json(os.path.join(folder, STATE))
    entries = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "filename" in e for e in entries):
        raise TokenmillError(f"{folder}/{STATE}: has no '_data_files' list; is this a save_to_disk folder?")
    files = []
    for entry in entries:
        name = str(entry["filename"])
        if os.path.basename(name) != name:
            raise TokenmillError(f"{folder}/{STATE}: data file {name!r} is not a plain file name in the folder")
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise TokenmillError(f"{path}: listed in {STATE} but missing; copy the whole folder")
        files.append(path)
    if not files:
        raise TokenmillError(f"{folder}: the saved dataset has no data files")
    return files


__all__ = ["data_files", "is_saved_dataset"]
