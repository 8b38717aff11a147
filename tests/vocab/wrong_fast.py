"""A fast encoder that is honestly wrong, for the tests of the check: gigatoken on the reference's
``tokenizer.json`` with its added tokens taken out, so special-token text in a document is encoded as plain
text (other ids than the reference's, which encodes it as the special token) and every other document
gets the reference's ids. Registered in place of the real builder with
``register_fast_encoder("hf", "tests.vocab.wrong_fast:ignores_added_tokens")``."""

from __future__ import annotations

import json

import gigatoken

from tokenmill.vocab.fast_encoder import FastBuild
from tokenmill.vocab.fast_gigatoken import batch_encoder
from tokenmill.vocab.tokenizer import Tokenizer

TARGET = "tests.vocab.wrong_fast:ignores_added_tokens"


def ignores_added_tokens(reference: Tokenizer) -> FastBuild:
    spec = json.loads(reference.path.read_bytes())
    added = tuple(token["content"] for token in spec.get("added_tokens") or ())
    spec["added_tokens"] = []
    text = json.dumps(spec)
    return FastBuild(batch_encoder(lambda: gigatoken.Tokenizer.from_json(text)), "wrong-gigatoken", added)
