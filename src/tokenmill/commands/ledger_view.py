"""``--state FILE``: a saved iterator state read from its JSON file and resumed into an iterator, for its
consumption ledger (per source, samples and tokens served this epoch and in total)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenmill.errors import ConfigError
from tokenmill.loader.iterator import BatchIterator


def state_ledger(iterator: BatchIterator, state_file: str, allow_mix_change: bool) -> dict[str, Any]:
    """The consumption ledger of the state in ``state_file``, resumed into ``iterator``."""
    try:
        state = json.loads(Path(state_file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"--state {state_file}: not a readable JSON iterator state ({error})") from None
    iterator.load_state_dict(state, allow_mix_change=allow_mix_change)
    return iterator.ledger()


__all__ = ["state_ledger"]
