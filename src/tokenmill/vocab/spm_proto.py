"""Two settings of a SentencePiece ``.model`` read straight from its protobuf bytes: the model type and
whether it has byte fallback.

Why: the fast encoder takes SentencePiece BPE models with byte fallback only, and every encode stage asks it
(:mod:`tokenmill.vocab.fast_encoder`). Asking the fast library costs its import and a read of every piece
through its Python protobuf reader: about a second of CPU per stage for an 8k-piece unigram model it then
turns down. These two fields are found in milliseconds by walking the message's top-level fields (the
pieces are skipped by their lengths, not parsed), without protobuf installed.

    model_settings(Path("spm.model").read_bytes())   # SpmSettings(model_type='unigram', byte_fallback=False)
"""

from __future__ import annotations

from dataclasses import dataclass

MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
"""``TrainerSpec.ModelType`` enum values (sentencepiece_model.proto) by name."""

_TRAINER_SPEC = 2  # ModelProto.trainer_spec
_MODEL_TYPE = 3  # TrainerSpec.model_type (default UNIGRAM)
_BYTE_FALLBACK = 35  # TrainerSpec.byte_fallback (default false)


@dataclass(frozen=True)
class SpmSettings:
    """What a model's trainer spec says: its type (``unigram``, ``bpe``, ``word``, ``char``) and byte fallback."""

    model_type: str
    byte_fallback: bool


def model_settings(data: bytes) -> SpmSettings | None:
    """The model type and byte fallback of the serialized ModelProto ``data``, or None when the bytes are not
    a well-formed message with a trainer spec (the caller then asks the library that reads models in full)."""
    trainer = _varints(data, want=_TRAINER_SPEC)
    if trainer is None:
        return None
    spec = trainer.get(_TRAINER_SPEC)  # every model SentencePiece writes has one
    fields = _varints(spec, want=None) if isinstance(spec, bytes) else None
    if fields is None:
        return None
    kind = fields.get(_MODEL_TYPE, 1)
    return SpmSettings(MODEL_TYPES.get(int(kind), str(kind)), bool(fields.get(_BYTE_FALLBACK, 0)))


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it (IndexError past the end)."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _varints(data: bytes, *, want: int | None) -> dict[int, int | bytes] | None:
    """The message's varint fields by number (the last one wins, as protobuf reads them), and field ``want``'s
    bytes when it is length-delimited; None when ``data`` is not a well-formed message."""
    found: dict[int, int | bytes] = {}
    pos, end = 0, len(data)
    try:
        while pos < end:
            tag, pos = _varint(data, pos)
            field, wire = tag >> 3, tag & 7
            if wire == 0:
                found[field], pos = _varint(data, pos)
            elif wire == 2:
                size, pos = _varint(data, pos)
                if field == want:
                    found[field] = data[pos:pos + size]
                pos += size
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
            else:  # groups and unknown wire types do not occur in a ModelProto
                return None
    except IndexError:
        return None
    return found if pos == end else None
