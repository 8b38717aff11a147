"""Compatibility name: the phases of a run cut for a scheduler now live with the stages
(:data:`tokenmill.prepare.stages.PHASES`); ``tokenmill.commands.prepare`` still imports them from here."""

from tokenmill.prepare.stages.base import PHASES

__all__ = ["PHASES"]
