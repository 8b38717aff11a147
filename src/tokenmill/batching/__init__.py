"""From sample lengths to batches: orders, token-budget packing, rank dealing, plans, collation.

Three modes cut an epoch into batches whose cost (rows x longest row, each side, padding
included) stays within ``max_tokens``: ``lowpad`` (ours, least padding), ``fairseq`` (fairseq's
``batch_by_size``, same batches) and ``opennmt`` (OpenNMT-tf's length buckets). A plan deals the
batches to ranks (equal counts, balanced tokens, no dummy batches) and is cached on disk.
"""

from tokenmill.batching.align import dense_matrix, parse_pharaoh
from tokenmill.batching.collate import CollateOptions, collate_fairseq, collate_opennmt, pad_rows
from tokenmill.batching.config import MODES, BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.multi_collate import MultiCollate
from tokenmill.batching.pack import pack_greedy, pack_lowpad
from tokenmill.batching.plan import EpochPlan, Planner, PlanStats
from tokenmill.batching.sampled import SampledPlanner

__all__ = [
    "MODES",
    "BatchConfig",
    "CollateOptions",
    "EpochPlan",
    "MultiCollate",
    "PlanStats",
    "Planner",
    "SampledPlanner",
    "Sizes",
    "collate_fairseq",
    "collate_opennmt",
    "dense_matrix",
    "pack_greedy",
    "pack_lowpad",
    "pad_rows",
    "parse_pharaoh",
]
