"""Language identification of whole chunks with py3langid's bundled model, offline and vectorized.

py3langid (a maintained fork of langid.py; its naive-Bayes model over byte n-grams ships inside
the wheel as an LZMA'd ``.npz`` read with ``allow_pickle=False``) classifies one string at a time
with a Python loop over the bytes. :class:`LanguageIdentifier` runs the same model on a chunk at
once: the byte-level automaton advances every line of the chunk one byte per numpy step, feature
counts are gathered with ``np.unique`` and the class scores are one sparse x dense product (scipy
when installed; otherwise numpy products summed per line, about 6x slower). Labels equal
``py3langid.classify`` (checked in the tests), except that a line with no n-gram feature at all
(e.g. empty) gets ``"und"`` instead of py3langid's arbitrary first label.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from itertools import repeat
from typing import Any

import numpy as np

from tokenmill.errors import ConfigError

_NOT_LOADED: Any = object()
# scipy.sparse (optional: its compiled sparse product scores ~6x faster than the numpy fallback), None
# without scipy. Imported by the first classification, not with this module: importing scipy costs ~0.2 s
# at every start of the command line, which language-ID filters are rarely part of.
_sparse: Any = _NOT_LOADED


def _sparse_module() -> Any:
    global _sparse
    if _sparse is _NOT_LOADED:
        try:
            import scipy.sparse as sparse
        except ImportError:  # pragma: no cover - depends on the environment
            sparse = None
        _sparse = sparse
    return _sparse

UNDETERMINED = "und"
_PAIRS_PER_BLOCK = 1 << 15  # (line, feature) pairs scored together: bounds the scratch matrix


class _Model:
    """Arrays of the py3langid model, as numpy."""

    def __init__(self) -> None:
        try:
            from py3langid.langid import MODEL_FILE
            from py3langid.langid import LanguageIdentifier as _PyIdentifier
        except ImportError:
            raise ConfigError(
                "language-ID filters need the 'py3langid' package (its model ships in the wheel): pip install py3langid"
            ) from None
        ident = _PyIdentifier.from_model_file(MODEL_FILE)
        self.ptc = np.asarray(ident.nb_ptc)  # (features, classes) float16 log-probabilities
        self.pc = np.asarray(ident.nb_pc, dtype=np.float32)  # class priors
        self.classes: list[str] = list(ident.nb_classes)  # may repeat a label (script variants)
        nextmove = ident.tk_nextmove
        self.nextmove = np.frombuffer(nextmove, dtype=np.dtype(f"u{nextmove.itemsize}")).astype(np.int64)
        self.rowbase = np.asarray(ident.tk_row, dtype=np.int64) << 8
        self.output = np.asarray(ident.tk_output, dtype=np.int64)


@lru_cache(maxsize=1)
def _model() -> _Model:
    return _Model()


class LanguageIdentifier:
    """Batch language ID; ``languages`` restricts the candidate labels (ISO 639-1 codes, as py3langid)."""

    def __init__(self, languages: Sequence[str] | None = None) -> None:
        model = _model()
        self._model = model
        if languages is None:
            cols = np.arange(len(model.classes))
        else:
            unknown = sorted(set(languages) - set(model.classes))
            if unknown:
                raise ConfigError(
                    f"language-ID does not know {unknown}; known codes: {', '.join(sorted(set(model.classes)))}"
                )
            wanted = set(languages)
            cols = np.array([i for i, c in enumerate(model.classes) if c in wanted], dtype=np.int64)
        self._ptc = model.ptc[:, cols]
        self._ptc32_cache: np.ndarray | None = None
        self._pc = model.pc[cols]
        classes = [model.classes[i] for i in cols]
        # columns sharing a label: score = the best of them (py3langid folds them the same way)
        first = {c: classes.index(c) for c in classes}
        self._aliases = [(first[c], i) for i, c in enumerate(classes) if first[c] != i]
        self._labels = np.array([*classes, UNDETERMINED], dtype=object)

    @property
    def labels(self) -> list[str]:
        """Distinct labels this identifier can return (besides ``"und"``)."""
        return list(dict.fromkeys(self._labels[:-1]))

    def classify(self, lines: Sequence[str]) -> np.ndarray:
        """Label per line (object array of str); ``"und"`` where the line has no n-gram feature."""
        return self.classify_with_confidence(lines)[0]

    def classify_with_confidence(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(labels, confidences): the label of :meth:`classify` and its probability among the candidates
        (py3langid's ``norm_probs``; float32, 0 for ``"und"``)."""
        n = len(lines)
        if n == 0:
            return np.empty(0, dtype=object), np.empty(0, dtype=np.float32)
        rows, feats, nbytes = self._features(lines)
        best = np.full(n, len(self._labels) - 1, dtype=np.int64)  # "und" unless scored below
        confidence = np.zeros(n, dtype=np.float32)
        if len(rows):
            n_feats = self._ptc.shape[0]
            key, counts = np.unique(rows * n_feats + feats, return_counts=True)
            rows, feats = key // n_feats, key % n_feats
            weights = np.log1p(counts.astype(np.float32))
            sparse = _sparse_module()
            if sparse is not None:  # one compiled sparse x dense product for the whole chunk
                matrix = sparse.csr_matrix((weights, (rows, feats)), shape=(n, n_feats))
                scored = np.flatnonzero(np.bincount(rows, minlength=n))
                scores = np.asarray(matrix[scored] @ self._ptc32()) + self._pc
                best[scored], confidence[scored] = self._decide(scores, nbytes[scored])
            else:
                self._score_numpy(rows, feats, weights, nbytes, best, confidence)
        return self._labels[best], confidence

    def _ptc32(self) -> np.ndarray:
        """The model as float32 (made once per identifier: ~57 MB for all languages)."""
        if self._ptc32_cache is None:
            self._ptc32_cache = self._ptc.astype(np.float32)
        return self._ptc32_cache

    def _score_numpy(self, rows: np.ndarray, feats: np.ndarray, weights: np.ndarray, nbytes: np.ndarray,
                     best: np.ndarray, confidence: np.ndarray) -> None:
        """Without scipy: per-pair products summed per line with ``np.add.reduceat``, in blocks."""
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        bounds = np.r_[starts, len(rows)]
        step = max(1, _PAIRS_PER_BLOCK // max(1, len(rows) // len(starts)))
        for b in range(0, len(starts), step):
            seg = bounds[b : b + step + 1]
            lo, hi = seg[0], seg[-1]
            part = self._ptc[feats[lo:hi]] * weights[lo:hi, None]  # float16 * float32 -> float32
            scores = np.add.reduceat(part, seg[:-1] - lo, axis=0)
            scores += self._pc
            lines = rows[seg[:-1]]
            best[lines], confidence[lines] = self._decide(scores, nbytes[lines])

    def _decide(self, scores: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the argmax column after folding duplicate-label columns onto their first column (the best
        of them), and that label's probability as py3langid's ``norm_probs`` gives it (softmax of the scores
        over sqrt(UTF-8 bytes), duplicate-label columns summed)."""
        scaled = scores / np.sqrt(np.maximum(nbytes, 1)).astype(np.float32)[:, None]
        probs = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        for first, dupe in self._aliases:
            np.maximum(scores[:, first], scores[:, dupe], out=scores[:, first])
            scores[:, dupe] = -np.inf
            probs[:, first] += probs[:, dupe]
        best = scores.argmax(axis=1)
        return best, np.take_along_axis(probs, best[:, None], axis=1)[:, 0].astype(np.float32)

    def _features(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(line index, feature id) for every feature the byte automaton emits on every line, and the UTF-8
        bytes of each line as the model reads it."""
        model = self._model
        encoded = list(map(str.encode, _prepare(lines), repeat("utf-8"), repeat("surrogatepass")))
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        nbytes = lengths.copy()
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        order = np.argsort(-lengths, kind="stable")  # longest first: active lines are a prefix
        starts, lengths = starts[order], lengths[order]
        state = np.zeros(len(order), dtype=np.int64)
        rows: list[np.ndarray] = []
        feats: list[np.ndarray] = []
        active = len(order)
        for pos in range(int(lengths[0]) if len(lengths) else 0):
            while active and lengths[active - 1] <= pos:
                active -= 1
            st = model.nextmove[model.rowbase[state[:active]] + data[starts[:active] + pos]]
            state[:active] = st
            out = model.output[st]
            hit = np.flatnonzero(out >= 0)
            if len(hit):
                rows.append(order[hit])
                feats.append(out[hit])
        if not rows:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), nbytes
        return np.concatenate(rows), np.concatenate(feats), nbytes


def _prepare(lines: Sequence[str]) -> list[str]:
    """py3langid's text preparation: all-uppercase lines lowercased, then NFC."""
    lines = list(lines)
    upper = np.fromiter(map(str.isupper, lines), dtype=bool, count=len(lines))
    for i in np.flatnonzero(upper).tolist():
        lines[i] = lines[i].lower()
    return list(map(unicodedata.normalize, repeat("NFC"), lines))


def langid_available() -> bool:
    """True when py3langid is importable (language-ID filters can run)."""
    try:
        import py3langid  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["UNDETERMINED", "LanguageIdentifier", "langid_available"]
