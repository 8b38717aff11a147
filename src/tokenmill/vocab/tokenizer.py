"""One tokenizer interface over every backend: the only thing the prepare pipeline talks to.

A backend is a small class with one shape (:class:`Tokenizer`): it loads a model file, encodes a
batch of lines to ``(flat ids, lengths)`` without adding special tokens (the pipeline appends
EOS/EOD itself), names its special ids, fingerprints its model, and copies its model into an
output directory under a stable name. Backends that can learn a vocabulary from a sample also
``train``. They are found by name in a registry and imported only when asked for, so the optional
libraries (``tokenizers``, ``tiktoken``) are needed only by those who use them::

    tok = load_tokenizer("hf", "tokenizer.json")
    flat, lengths = tok.encode_batch(lines, num_threads=8)
    tok.save(out_dir)                      # tokenizer.json + tokenmill-tokenizer.json
    tok = load_saved(out_dir)              # the same tokenizer again

    tok = train_tokenizer("sentencepiece", sample, {"vocab_size": 8000}, out_dir / "spm.model")

Backends: ``sentencepiece``, ``hf`` (Hugging Face ``tokenizers``), ``tiktoken``, ``t2t-subword``,
``whitespace`` (a fairseq ``dict.txt``). Settings are one dataclass per backend (``Settings`` for
loading, ``TrainSettings`` for training), given as the dataclass or a plain dict.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import hashlib
import importlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import sentencepiece

from tokenmill.errors import ConfigError
from tokenmill.fsutil import atomic_path, write_json

SPECIAL_KEYS = ("bos", "eos", "pad", "unk", "eod")
"""Keys of :attr:`Tokenizer.special_ids`; ``eod`` is the id the pipeline appends after a document."""

MANIFEST = "tokenmill-tokenizer"
"""Stem of the file :meth:`Tokenizer.save` writes beside the model: backend, settings, model name."""


@runtime_checkable
class Tokenizer(Protocol):
    """What the pipeline needs from a tokenizer, whatever library is behind it."""

    name: str
    """The backend (registry name)."""
    path: Path
    """The model file it was loaded from."""

    @property
    def vocab_size(self) -> int:
        """Ids are ``0 .. vocab_size-1``, added and special tokens included."""
        ...

    @property
    def special_ids(self) -> dict[str, int]:
        """Ids of the special tokens it has, keyed by ``bos``/``eos``/``pad``/``unk``/``eod``."""
        ...

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Ids of all ``lines`` concatenated and the number of ids of each line (both int64).

        No special token is added. ``num_threads`` is a bound on the threads used, not a promise."""
        ...

    def decode(self, ids: Iterable[int]) -> str: ...

    def id_to_token(self, token_id: int) -> str:
        """The token string of an id (IndexError outside the vocabulary)."""
        ...

    def token_to_id(self, token: str) -> int | None:
        """The id of a token string, None when it is not in the vocabulary."""
        ...

    def fingerprint(self) -> str:
        """Hash of the backend, the model file contents and the settings that change ids."""
        ...

    def save(self, directory: str | os.PathLike[str], tag: str | None = None) -> list[Path]:
        """Copy the model into ``directory`` under its stable name (``tag``, e.g. a language, goes
        before the extension) and write the manifest :func:`load_saved` reads; returns the paths."""
        ...


# ----------------------------------------------------------------------------- settings
@dataclasses.dataclass
class NoSettings:
    """For backends whose model file says everything."""


def make_settings(cls: type, value: Any, backend: str) -> Any:
    """``value`` (None, a dict or an instance of ``cls``) as an instance of ``cls``."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ConfigError(
                f"{backend} tokenizer has no setting {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(known)) or 'none'}"
            )
        return cls(**value)
    raise ConfigError(f"{backend} tokenizer settings must be a mapping or {cls.__name__}, not {type(value).__name__}")


def settings_dict(settings: Any) -> dict[str, Any]:
    return dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else dict(settings or {})


# ----------------------------------------------------------------------------- helpers
def flatten(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per-line id lists as ``(flat int64 ids, int64 lengths)``."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    return flat, lengths


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sniff(path: str | os.PathLike[str]) -> str | None:
    """The backend whose model file ``path`` looks like (for error messages), None when unsure."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return None
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if text.lstrip().startswith("{") and '"model"' in text:
        return "hf"
    lines = [line for line in text.split("\n")[:-1] if line.strip()][:50]  # the last may be cut short
    if b"\0" in head or any("\ufffd" in line for line in lines):
        return "sentencepiece" if _is_sentencepiece(Path(path)) else None
    if not lines:
        return None
    if all(len(parts := line.split()) == 2 and parts[1].isdigit() for line in lines):
        return "tiktoken" if all(_is_base64(line.split()[0]) for line in lines) else "whitespace"
    if all(" " in line and line.rpartition(" ")[2].lstrip("-").isdigit() for line in lines):
        return "whitespace"
    if lines[0].strip().strip("'\"").removesuffix("_") == "<pad>":
        return "t2t-subword"
    return None


def _is_sentencepiece(path: Path) -> bool:
    try:
        if path.stat().st_size > 64 << 20:
            return False
        sentencepiece.SentencePieceProcessor(model_proto=path.read_bytes())
    except (OSError, RuntimeError, TypeError):
        return False
    return True


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def bad_model(path: str | os.PathLike[str], backend: str, what: str, detail: object = "") -> ConfigError:
    """One line: the file, what it should have been, why not, and what to do about it."""
    detail = " ".join(str(detail).split())
    if len(detail) > 200:
        detail = detail[:197] + "..."
    guess = sniff(path)
    if guess and guess != backend:
        hint = f"it looks like a {BACKENDS[guess].describe} file: use the {guess!r} tokenizer for it"
    else:
        hint = f"give the {BACKENDS[backend].describe} file itself, or the tokenizer backend that reads this file"
    return ConfigError(f"{path} is not a {what}" + (f" ({detail})" if detail else "") + f"; {hint}")


def stable_name(filename: str, tag: str | None) -> str:
    """``tokenizer.json`` + tag ``en`` -> ``tokenizer.en.json`` (the tag goes before the extension)."""
    if not tag:
        return filename
    stem, dot, ext = filename.partition(".")
    return f"{stem}.{tag}{dot}{ext}"


def manifest_path(directory: str | os.PathLike[str], tag: str | None = None) -> Path:
    return Path(directory) / stable_name(f"{MANIFEST}.json", tag)


# ----------------------------------------------------------------------------- base class
class TokenizerBase:
    """Shared parts: settings, fingerprint and save. Subclasses set the class attributes, implement
    ``_load`` (from the model file) and the encoding methods, and ``_train`` where they can."""

    name: ClassVar[str]
    filename: ClassVar[str]
    """Stable name of the model file in an output directory."""
    Settings: ClassVar[type] = NoSettings
    TrainSettings: ClassVar[type | None] = None
    stores_own_ids: ClassVar[bool] = True
    """Whether prepared stores hold this backend's own ids (False: its pieces or words become the words of a
    fairseq dictionary and are remapped through it, as ``spm_encode`` + ``fairseq-preprocess`` do)."""
    needs_model: ClassVar[bool] = True
    """Whether text is encoded with a model file (False: whitespace words, numbered as the text is read)."""
    samples_by_bytes: ClassVar[bool] = False
    """Whether training reads a byte budget of each text file (T2T's builder) rather than a line sample."""
    may_stop_short: ClassVar[bool] = False
    """Whether a trained model may hold fewer pieces than the vocabulary size asked for (SentencePiece)."""
    has_unknown_surfaces: ClassVar[bool] = False
    """Whether a piece it calls unknown has a surface text that fairseq keeps as a word of its own
    (``spm_encode`` prints it; see ``prepare.tokenizing.UnknownSurfaces``)."""
    shares_loads: ClassVar[bool] = False
    """Whether one loaded model may serve several callers (no state that changes after loading, loading
    costs): :func:`load_tokenizer` then loads each model content once."""
    overlaps_batches: ClassVar[bool] = False
    """Whether ``encode_batch`` lets go of the GIL while it encodes, so that two batches on two threads keep
    the cores busy where one leaves them idle (its last long lines, its ids turned into arrays). Not for a
    backend whose batch call already runs Python per line on threads (tiktoken): more threads then only
    fight over the GIL."""

    def __init__(self, path: str | os.PathLike[str], settings: Any = None) -> None:
        self.path = Path(path)
        self.settings = make_settings(self.Settings, settings, self.name)
        self._fingerprint: str | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str], settings: Any = None) -> TokenizerBase:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"tokenizer model {path} does not exist ({cls.name} needs its {cls.filename} file)")
        return cls(path, settings)

    @classmethod
    def train(cls, lines: Sequence[str], settings: Any, out_path: str | os.PathLike[str]) -> TokenizerBase:
        """Learn a vocabulary from ``lines`` (the sample), write the model to ``out_path`` atomically,
        and load it (with default loading settings)."""
        if cls.TrainSettings is None:
            raise ConfigError(f"the {cls.name} tokenizer cannot be trained; give its model file instead")
        lines = list(lines)
        if not lines:
            raise ConfigError(f"no training lines left for the {cls.name} tokenizer (all filtered out, or empty input)")
        cls._train(lines, make_settings(cls.TrainSettings, settings, cls.name), Path(out_path))
        return cls.load(out_path)

    @classmethod
    def _train(cls, lines: list[str], settings: Any, out_path: Path) -> None:
        raise NotImplementedError

    # ---------------------------------------------------------------- identity
    def model_files(self) -> list[tuple[Path, str]]:
        """(source file, stable name) of each file that makes the model; the first is the model."""
        return [(self.path, self.filename)]

    def identity_settings(self) -> dict[str, Any]:
        """The settings that go into the fingerprint (all of them unless a backend says otherwise)."""
        return settings_dict(self.settings)

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            parts = {
                "backend": self.name,
                "files": [file_sha256(source) for source, _ in self.model_files()[:1]],
                "settings": self.identity_settings(),
            }
            blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
            self._fingerprint = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        return self._fingerprint

    def save(self, directory: str | os.PathLike[str], tag: str | None = None) -> list[Path]:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for source, filename in self.model_files():
            target = directory / stable_name(filename, tag)
            if not (target.exists() and os.path.samefile(source, target)):
                with atomic_path(target) as tmp:
                    shutil.copyfile(source, tmp)
            written.append(target)
        manifest = manifest_path(directory, tag)
        write_json(
            manifest,
            {
                "backend": self.name,
                "model": written[0].name,
                "settings": settings_dict(self.settings),
                "fingerprint": self.fingerprint(),
                "vocab_size": self.vocab_size,
                "special_ids": self.special_ids,
            },
        )
        return [*written, manifest]

    # ---------------------------------------------------------------- defaults
    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    @property
    def special_ids(self) -> dict[str, int]:
        raise NotImplementedError

    def _check_id(self, token_id: int) -> int:
        token_id = int(token_id)
        if not 0 <= token_id < self.vocab_size:
            raise IndexError(f"id {token_id} is outside the {self.name} vocabulary of {self.vocab_size}")
        return token_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path} vocab_size={self.vocab_size}>"


# ----------------------------------------------------------------------------- registry
@dataclasses.dataclass(frozen=True)
class Backend:
    """A registry entry: where the class lives, and what to install when it cannot be imported."""

    name: str
    target: str
    """``module:Class``, imported on first use."""
    describe: str
    """What its model file is, for messages."""
    extra: str | None = None
    """pip extra that installs its library."""

    def resolve(self) -> type[TokenizerBase]:
        module_name, _, attr = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            if self.extra is None:
                raise
            raise ConfigError(
                f"the {self.name} tokenizer needs {error.name or 'its library'}: pip install 'tokenmill[{self.extra}]'"
            ) from None
        return getattr(module, attr)


BACKENDS: dict[str, Backend] = {}


def register_backend(name: str, target: str, describe: str, extra: str | None = None) -> None:
    """Add (or replace) a backend: ``target`` is ``module:Class`` of a :class:`TokenizerBase` subclass."""
    BACKENDS[name] = Backend(name, target, describe, extra)


register_backend("sentencepiece", "tokenmill.vocab.spm_backend:SentencePieceTokenizer", "SentencePiece .model")
register_backend("hf", "tokenmill.vocab.hf:HFTokenizer", "Hugging Face tokenizer.json", extra="hf")
register_backend(
    "tiktoken", "tokenmill.vocab.tiktoken_backend:TiktokenTokenizer", "tiktoken .tiktoken ranks", extra="tiktoken"
)
register_backend("t2t-subword", "tokenmill.vocab.t2t_backend:T2TSubwordTokenizer", "T2T subword vocab")
register_backend("whitespace", "tokenmill.vocab.whitespace:WhitespaceTokenizer", "fairseq dict.txt")


def get_backend(name: str) -> type[TokenizerBase]:
    if name not in BACKENDS:
        raise ConfigError(f"unknown tokenizer {name!r}; choose one of {', '.join(BACKENDS)}")
    return BACKENDS[name].resolve()


LOADED_KEEP = 4
"""Loaded models kept for reuse (:func:`load_tokenizer`), the most recently loaded first."""
_loaded: dict[tuple[str, str, str], TokenizerBase] = {}


def load_tokenizer(backend: str, model: str | os.PathLike[str], settings: Any = None) -> Tokenizer:
    """Load ``model`` (a file) with the named backend. A backend whose loads are costly and shareable
    (``shares_loads``: a 128k ``tokenizer.json`` takes a second) is loaded once per model content and
    settings: prepare's stages ask for the given model, its working copy and its published copy, which
    are the same bytes; each caller gets its own shallow copy naming the path it asked for."""
    cls = get_backend(backend)
    path = Path(model)
    if not cls.shares_loads or not path.is_file():
        return cls.load(path, settings)
    key = (backend, file_sha256(path), repr(make_settings(cls.Settings, settings, cls.name)))
    loaded = _loaded.pop(key, None)
    if loaded is None:
        loaded = cls.load(path, settings)
    _loaded[key] = loaded  # most recent last
    while len(_loaded) > LOADED_KEEP:
        del _loaded[next(iter(_loaded))]
    twin = copy.copy(loaded)
    twin.path = path
    return twin


def train_tokenizer(backend: str, lines: Sequence[str], settings: Any, out_path: str | os.PathLike[str]) -> Tokenizer:
    """Train the named backend on ``lines`` (already sampled), write ``out_path``, return it loaded."""
    return get_backend(backend).train(lines, settings, out_path)


def load_saved(directory: str | os.PathLike[str], tag: str | None = None) -> Tokenizer:
    """The tokenizer :meth:`Tokenizer.save` wrote into ``directory`` (with the same ``tag``)."""
    manifest = manifest_path(directory, tag)
    try:
        info = json.loads(manifest.read_text(encoding="utf-8"))
        backend, model, settings = info["backend"], info["model"], info.get("settings")
        if not isinstance(backend, str) or not isinstance(model, str) or Path(model).name != model or not model:
            raise ValueError(f"backend {backend!r} and model {model!r} must name a backend and a file beside it")
        if not isinstance(settings, dict | None):
            raise ValueError(f"settings {settings!r:.80} are not a mapping")
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    except FileNotFoundError:
        raise ConfigError(f"{manifest} does not exist: {directory} holds no saved tokenizer") from None
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise ConfigError(f"{manifest} is not a tokenizer manifest ({error}); save the tokenizer again") from None
    return load_tokenizer(backend, Path(directory) / model, settings)
