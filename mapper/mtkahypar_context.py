"""Mt-KaHyPar contexts its Python binding cannot set directly: the deterministic quality
preset (backends.MtKaHyPar's) with another number of initial-partitioning runs. The binding
sets k, epsilon, objective and V-cycles only; every other parameter comes from a preset or
from an ini file, so the preset's parameters are written out once (Mt-KaHyPar 1.7's names)
with the one change, and loaded from a temporary file. Where the installed Mt-KaHyPar does not read
them (another version's names) the preset itself is used."""
from __future__ import annotations

import os
import tempfile

# the deterministic_quality preset, parameter by parameter (its values in Mt-KaHyPar 1.7;
# tests/test_backends.py checks that with 20 runs this file partitions exactly as the preset)
DETERMINISTIC_QUALITY = """\
mode=direct
preset-type=deterministic_quality
deterministic=true
maxnet-removal-factor=0.01
smallest-maxnet-threshold=50000
maxnet-ignore=1000
num-vcycles=0
s-use-localized-random-shuffle=false
s-static-balancing-work-packages=128
p-stable-io=true
p-enable-community-detection=true
p-louvain-edge-weight-function=hybrid
p-max-louvain-pass-iterations=5
p-louvain-min-vertex-move-fraction=0.01
p-vertex-degree-sampling-threshold=200000
p-louvain-low-memory-contraction=true
p-num-sub-rounds=16
c-type=deterministic_multilevel_coarsener
c-use-adaptive-edge-size=false
c-resolve-swaps=true
c-min-shrink-factor=1.01
c-max-shrink-factor=2.5
c-s=1
c-t=160
c-vertex-degree-sampling-threshold=200000
c-num-sub-rounds=3
c-rating-score=heavy_edge
c-rating-heavy-node-penalty=no_penalty
c-rating-acceptance-criterion=best_prefer_unmatched
i-mode=rb
i-runs={ip_runs}
i-use-adaptive-ip-runs=false
i-perform-refinement-on-best-partitions=false
i-remove-degree-zero-hns-before-ip=true
i-fm-refinement-rounds=3
i-lp-maximum-iterations=20
i-lp-initial-block-size=5
i-r-refine-until-no-improvement=false
i-r-lp-type=deterministic
i-r-lp-maximum-iterations=5
i-r-sync-lp-sub-rounds=1
i-r-lp-he-size-activation-threshold=100
i-r-sync-lp-active-nodeset=true
i-r-fm-type=do_nothing
i-population-size=64
r-refine-until-no-improvement=false
r-rebalancer-type=deterministic
r-max-det-rebalancing-rounds=0
r-det-rebalancing-deadzone=0.1
r-det-rebalancing-heavy-vertex-exclusion=1.5
r-lp-type=do_nothing
r-lp-maximum-iterations=5
r-sync-lp-sub-rounds=1
r-lp-he-size-activation-threshold=100
r-sync-lp-active-nodeset=true
r-jet-type=deterministic
r-jet-num-iterations={jet_iterations}
r-jet-relative-improvement-threshold=0.001
r-jet-dynamic-rounds={jet_rounds}
r-jet-initial-negative-gain=0.75
r-jet-final-negative-gain=0.0
r-fm-type=do_nothing
r-flow-algo=deterministic
r-flow-scaling=16
r-flow-max-num-pins=4294967295
r-flow-find-most-balanced-cut=true
r-flow-determine-distance-from-cut=true
r-flow-max-bfs-distance=2
r-flow-min-relative-improvement-per-round=0.001
r-flow-time-limit-factor=8
r-flow-skip-small-cuts=true
r-flow-skip-unpromising-blocks=true
r-flow-pierce-in-bulk=true
r-flow-process-mapping-policy=lower_bound
one-to-one-mapping-strategy=greedy_mapping
mapping-use-local-search=true
mapping-largest-he-fraction=0.0
mapping-min-pin-coverage=0.05
"""


def deterministic_quality(lib, init, ip_runs: int = 20, jet_rounds: int = 3, jet_iterations: int = 8, seed: int = 0):
    """The deterministic quality preset's context with ip_runs initial-partitioning runs and
    jet_rounds dynamic rounds of jet_iterations iterations of its Jet refinement (the preset:
    20, 3 and 8; the preset's own context where this Mt-KaHyPar does not read the parameters).
    seed: the context's own seed, which the deterministic presets use (mtkahypar.set_seed does
    not reach them: every seed partitioned as seed 0)."""
    try:
        fd, path = tempfile.mkstemp(prefix="rankmap-mtkahypar-", suffix=".ini")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(DETERMINISTIC_QUALITY.format(ip_runs=int(ip_runs), jet_rounds=int(jet_rounds), jet_iterations=int(jet_iterations))
                        + (f"seed={int(seed)}\n" if seed else ""))
            return init.context_from_file(path)
        finally:
            os.unlink(path)
    except (OSError, lib.InvalidParameterError):
        # another Mt-KaHyPar's parameter names, or no temporary directory: the preset
        return init.context_from_preset(lib.PresetType.DETERMINISTIC_QUALITY)
