"""A blend state that names members by fingerprint alone, read as one that names them by key.

Blend members are keyed by fingerprint and content (:mod:`~tokenmill.data.blend_members`). A state saved
before that (by an earlier release, or by a blend whose members did not know their content) names them by
fingerprint alone: in its mix (``config.selection``), in the mixes of its resume segments and in its
ledger. :func:`upgrade` names such a member by its key before the state is checked and used, so the
plans and the ledger see one kind of name:

- where the state records the member's content (``contents``, states of this wave before keys held
  it), the key is made from it: a store that now holds other tokens is then another member, refused
  as such without ``allow_mix_change``;
- else the member is this blend's member with the same fingerprint (the k-th such member for the k-th
  mention): such a state is checked on the lengths, as when it was saved; a member this blend lacks
  keeps its fingerprint (a retired member).

The state's data and plan fingerprints, hashes of the mix it names, are moved to the upgraded mix when
they match the mix as saved (else they are left, and the resume is refused as before).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tokenmill.batching.gpt_mix import BlendPlanner
from tokenmill.batching.gpt_plan import plan_fingerprint
from tokenmill.data.blend_members import content_key, knows_content, lengths_part, numbered
from tokenmill.data.blending import blend_fingerprint
from tokenmill.loader.data_identity import KEY


class _Names:
    """Upgrades lists of member names against this blend's keys and the contents a state records."""

    def __init__(self, current: Sequence[str], contents: Mapping[str, Any]) -> None:
        self.current = list(current)
        self.contents = {str(k): str(v) for k, v in contents.items()}

    def upgrade(self, names: Sequence[Any]) -> list[str]:
        """``names`` with each fingerprint-only name this blend lacks replaced by its key (module docstring)."""
        names = [str(n) for n in names]
        mentions = Counter(names)
        taken = set(names)
        out = []
        for name in names:
            if knows_content(name) or name in self.current:
                out.append(name)
            elif name in self.contents and mentions[name] == 1:
                out.append(content_key(name, self.contents[name]))
            else:
                match = next((k for k in self.current if lengths_part(k) == name and k not in taken), name)
                taken.add(match)
                out.append(match)
        return numbered(out) if out != names else out

    def mix(self, mix: Any) -> Any:
        """A recorded blend mix with its members upgraded (anything else as it is)."""
        if not isinstance(mix, Mapping) or not isinstance(mix.get("datasets"), list):
            return mix
        return {**mix, "datasets": self.upgrade(mix["datasets"])}


def upgrade(state: dict[str, Any], planner: Any) -> dict[str, Any]:
    """``state`` with its blend members named by key (module docstring); the state itself when nothing is to
    upgrade (a state of this release, or of something other than a blend)."""
    if not isinstance(planner, BlendPlanner):
        return state
    now = planner.mix
    contents = state.get(KEY) if isinstance(state.get(KEY), Mapping) else {}
    names = _Names(now["datasets"], contents)
    config = dict(state.get("config") or {})
    saved = config.get("selection")
    if not isinstance(saved, Mapping):  # saved before blends recorded their mix: its data name the mix
        saved = {**now, "datasets": [lengths_part(k) for k in now["datasets"]]}
        if state.get("data") != blend_fingerprint(saved):
            return state
    config["selection"] = names.mix(saved)
    segments = [[*x[:2], names.mix(x[2])] if len(x) == 3 and x[2] is not None else x
                for x in state.get("segments") or []]
    ledger = state.get("ledger")
    if isinstance(ledger, Mapping) and isinstance(ledger.get("sources"), list):
        ledger = {**ledger, "sources": names.upgrade(ledger["sources"])}
    if config["selection"] == saved and segments == list(state.get("segments") or []) \
            and ledger == state.get("ledger") and "selection" in (state.get("config") or {}):
        return state
    upgraded = {**state, "config": config, "segments": segments, **({"ledger": ledger} if ledger else {})}
    if contents:
        upgraded[KEY] = {k if knows_content(k) else content_key(k, str(v)): v for k, v in contents.items()}
    if state.get("data") == blend_fingerprint(saved):
        upgraded["data"] = blend_fingerprint(config["selection"])
        world = int(state.get("world_size") or planner.world_size)
        if state.get("fingerprint") == plan_fingerprint(state["data"], planner.config, world):
            upgraded["fingerprint"] = plan_fingerprint(upgraded["data"], planner.config, world)
    return upgraded


__all__ = ["upgrade"]
