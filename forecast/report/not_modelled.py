"""What the model leaves out, as the report lists it: data, not parsed from the docs at run time.

The first items follow docs/validation.md section 6 ("What the model leaves out") in plain words;
each names the opening words of its bullet there (``doc_opening``), and
``tests/report/test_report.py::test_not_modelled_follows_validation_doc`` fails when a bullet is added
to or removed from that section without this table following.  The last items are about the
forecast rather than the step-time model and have no bullet there.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["NOT_MODELLED", "NotModelled", "not_modelled"]


class NotModelled(NamedTuple):
    """One thing the model leaves out: the report's sentence and where the docs discuss it."""

    text: str
    doc_opening: str | None = None  # the opening words of its docs/validation.md 6 bullet
    realistic_text: str | None = None  # the sentence for a forecast of launchable plans


NOT_MODELLED: tuple[NotModelled, ...] = (
    NotModelled(
        "FSDP / ZeRO-3 weight sharding: memory per accelerator is reduced only by pipeline x "
        "tensor parallelism (ZeRO-1 shards the optimizer state over data parallelism). Sharding "
        "the weights over data parallelism would relieve that memory pressure, at the cost of "
        "all-gathers over the network, and could move the data-movement wall later.",
        "FSDP / ZeRO-3",
    ),
    NotModelled(
        "Mixture of experts is modelled simply: expert parallelism with one expert per "
        "data-parallel rank, four all-to-alls per layer on the serial path and Chinchilla "
        "scaling on the active parameters. Load imbalance, capacity factors, other expert "
        "placements and sparse scaling laws are not modelled.",
        "Mixture of experts",
    ),
    NotModelled(
        "Attention FLOPs and embeddings: training compute follows the 6 N D rule.",
        "Attention FLOPs",
    ),
    NotModelled(
        "The forecast searches the paper's relaxed plans: microbatches of any number of tokens "
        "(no sequence has to be split over context-parallel ranks), continuous data-parallel "
        "degrees, microbatch counts and layers per stage, no interleaved schedule. The realistic "
        "regime (wallcast walls --regime realistic) searches only plans a run can launch.",
        "In the paper regime",
        "The forecast searches plans a run can launch, from a shortlist of 979 shapes of its "
        "61,880 (whole sequences per microbatch, up to 64, or one sequence over up to 64 "
        "context-parallel ranks, not both; whole layers per stage; interleaving of 1, 2 or 4 "
        "virtual stages; full recomputation or none); the paper's relaxed plans (microbatches of "
        "any number of tokens, continuous degrees) are shown beside it, not searched for its "
        "walls.",
    ),
    NotModelled(
        "Pipeline schedules beyond interleaved 1F1B (zero-bubble, DualPipe) and ring attention's "
        "overlap of key/value transfers with attention compute.",
        "Pipeline schedules beyond interleaved 1F1B",
    ),
    NotModelled(
        "The forecast's plan search (the paper regime) uses powers of two for tensor and pipeline "
        "parallelism (the realistic regime searches every pipeline of up to 16 stages and deeper "
        "ones that follow the model's depth); other degrees would smooth the dips in utilization "
        "where tensor parallelism must double.",
        "The paper regime's plan search is over powers of two",
        "Tensor parallelism is searched over powers of two (1D, or square 2D meshes); other "
        "degrees would smooth the dips in utilization where tensor parallelism must double.",
    ),
    NotModelled(
        "Hardware: one frontier accelerator per year on smooth trends; one-off jumps beyond the "
        "fitted residuals, new network topologies, optical interconnects and in-network "
        "reduction are not modelled. Scale-up domains grow at a sampled rate from 72 in 2025."
    ),
    NotModelled(
        "Training run: a fixed-length run (sampled duration) with the critical batch size from "
        "the scaling priors; asynchronous or local-SGD style training, which relaxes the latency "
        "wall, is not modelled."
    ),
    NotModelled(
        "Frontier compute follows the fitted log-linear trend of the largest runs; economic "
        "limits (power, chips, money) that could bend that trend are outside the model, and so "
        "is the possibility that developers stop scaling single runs."
    ),
    NotModelled(
        "Structural uncertainty is not in the intervals: they cover the priors and the trend "
        "fit, not the chance that the model of step time itself is wrong."
    ),
)


def not_modelled(regime: str = "paper") -> list[str]:
    """The report's list of what the model leaves out (the report names no document: the list
    is kept equal to docs/validation.md's by a test), for a forecast of ``regime``'s plans."""
    if regime == "realistic":
        return [item.realistic_text or item.text for item in NOT_MODELLED]
    return [item.text for item in NOT_MODELLED]
