"""The engine section: where the tasks run (a registered engine part, :mod:`tokenmill.prepare.engines`), how
many there are, and the options of remote storage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.kinds import AtLeast0, EngineName
from tokenmill.prepare.config.section import Section
from tokenmill.prepare.engines import engine_options, engine_part

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class EngineSettings(Section):
    """Tasks and engines (``name`` is the ``--engine`` setting)."""

    TITLE: ClassVar[str] = "beyond one machine"

    name: EngineName = field(
        default="local",
        metadata={"key": "engine",
                  "help": "Where the tasks run: local (this machine), ray (a Ray cluster; pip install tokenmill[ray])"
                          " or slurm (writes an sbatch script of array jobs). The output is byte-identical for every "
                          "engine."},
    )
    tasks: Annotated[int, AtLeast0] = field(
        default=0,
        metadata={"help": "Cut the training split into this many tasks by input order (0: one per GiB of input "
                          "locally, one per 256 MiB on ray/slurm). Each is re-run alone if it fails; the output does "
                          "not depend on the count."},
    )
    ray_address: str | None = field(
        default=None,
        metadata={"help": "--engine ray: the cluster to join (auto, or HOST:PORT of its head); default: start Ray "
                          "here."},
    )
    storage_options: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "fsspec options for URL inputs and --destdir URL (s3://..., gs://...; pip install "
                          "tokenmill[s3]), e.g. client_kwargs={endpoint_url: ...} in YAML, a JSON object or "
                          "key=value,key=value on the command line; credentials also come from the environment as "
                          "fsspec reads it."},
    )

    @property
    def is_cluster(self) -> bool:
        """Whether the engine runs tasks on other machines."""
        return engine_part(self.name).is_cluster

    def checked(self, config: PrepareConfig) -> EngineSettings:
        """The engine is registered and takes the engine options given, its library is installed, and what a
        cluster engine needs can be cut into tasks."""
        part = engine_part(self.name)
        part.check({option: config.value(option) for option in engine_options()})
        if self.tasks > 1 or part.is_cluster:
            inputs = config.inputs
            what = ("--align-suffix" if inputs.align_suffix else
                    "--documents blank-line" if inputs.documents == "blank-line" else None)
            if what:
                raise ConfigError(f"{what} is not cut into tasks yet: use --tasks 1 --engine local with it")
        return self
