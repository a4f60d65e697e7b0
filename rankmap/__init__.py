"""rankmap: topology-aware process mapping for MPI programs.

The Python API, for people who script: read traffic, describe a machine, map, evaluate,
write. Each is a small function over the objects the command line uses.

>>> import numpy as np, rankmap
>>> ring = np.roll(np.eye(8), 1, axis=1) * 1e6          # rank i sends 1 MB to rank i+1
>>> t = rankmap.traffic(ring)
>>> m = rankmap.machine("n[1-2]", "pack:2 core:2")      # 2 nodes x 2 sockets x 2 cores
>>> result = rankmap.map(t, m, seed=0)
>>> rankmap.evaluate(t, m, result.slot_of_rank)["internode_fraction"]   # 2 of the 8 ring edges cross nodes
0.25
>>> rankmap.hosts(m, result.slot_of_rank)
['n1', 'n1', 'n1', 'n1', 'n2', 'n2', 'n2', 'n2']

Bad input raises rankmap.UserError, whose message says what to change:

>>> try:
...     rankmap.machine("n[1-2]", "pack:2 core:0")
... except rankmap.UserError as e:
...     print("refused")
refused
"""
from pathlib import Path as _Path

# Installed, the layers are subpackages of this one (rankmap.profiler, rankmap.mapper,
# rankmap.slurm). In a source checkout they are the top-level folders next to this one:
# let the package find them there too, so that tests and benchmarks run from the checkout
# import the same code the wheel installs.
_here = _Path(__file__).resolve().parent
if not (_here / "mapper").is_dir() and (_here.parent / "mapper" / "__init__.py").is_file():
    __path__.append(str(_here.parent))  # noqa: F821  (a package's __path__)

from rankmap.profiler.errors import UserError  # noqa: E402  (what every function here raises on bad input)

__all__ = ["traffic", "read_traffic", "machine", "map", "evaluate", "hosts", "write", "UserError"]


def traffic(matrix, source: str = "matrix"):
    """Traffic from a square matrix (numpy or scipy.sparse): entry (i, j) = bytes rank i
    sends to rank j.

    >>> import rankmap
    >>> rankmap.traffic([[0, 5], [3, 0]]).size
    2
    """
    import numpy as np
    import scipy.sparse as sp
    from rankmap.profiler import validate
    from rankmap.profiler.errors import UserError
    from rankmap.profiler.traffic import Traffic, check_matrix
    if not isinstance(source, str):
        # traffic(bytes, msgs): the second matrix became the name in every message and in
        # report.json, the message counts dropped without a word
        raise UserError(f"source: expected a name (text) for the traffic, not {type(source).__name__}; traffic() "
                        "takes one matrix, of bytes")
    if np.ma.isMaskedArray(matrix) and np.ma.getmaskarray(matrix).any():
        # np.asarray drops the mask: the hidden values under it were read as bytes
        raise UserError(f"{source}: a masked array with masked entries; fill them first "
                        "(matrix.filled(0): no traffic there)")
    if not sp.issparse(matrix):       # as it is: a complex, text or 3-D array is refused, not cast
        try:
            a = np.asarray(matrix)
        except (ValueError, TypeError) as e:
            raise UserError(f"{source}: not a matrix ({validate.one_line(e)})") from None
        if a.dtype == np.float16:      # scipy.sparse has no float16 (a ValueError from scipy); exact in float32
            a = a.astype(np.float32)
        matrix = sp.csr_matrix(a) if a.ndim == 2 and a.dtype.kind in "biuf" else a
    return Traffic(bytes=check_matrix(matrix, source), source=source, format="matrix")


def read_traffic(path, format: str = "auto", collectives: str = "auto", allow_partial: bool = False):
    """Traffic from a profiler run directory or a file (mpiP, TreeMatch, Open MPI monitoring,
    SMPI trace, MatrixMarket, CSV, NPZ, METIS...; docs/formats.md); a profile's collectives
    become pairs by the model `collectives`."""
    import os
    from rankmap.profiler.errors import UserError
    from rankmap.profiler.formats import read_traffic as _read
    # as the command line's MATRIX, --format and --collectives: text (a TypeError or an
    # AttributeError from inside the reader before)
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise UserError(f"path {path!r:.60}: expected a file or directory name (str or pathlib.Path)")
    for name, v in (("format", format), ("collectives", collectives)):
        if not isinstance(v, str):
            raise UserError(f"{name} {v!r:.60}: expected text such as 'auto'")
    return _read(os.fspath(path) if path is not None else None, format, collectives, allow_partial)


def machine(nodes, node_topology, *, torus=None, mesh=None, coords=None, network=None, level_costs=None,
            hop_cost=None, ranks_per_node=None, oversubscribe: int = 1):
    """A machine: `nodes` a hostlist ("n[01-36]") or a list of host names; `node_topology`
    what `--node-topology` takes (an lstopo XML file, "pack:2 core:6", or a list of
    "HOSTLIST=SPEC" for heterogeneous nodes); the network between the nodes and the level
    costs as the command line's options say (docs/mapper.md).

    >>> import rankmap
    >>> rankmap.machine("n[1-3]", "pack:2 core:4", torus="3").nslots
    24
    """
    import os
    from rankmap.mapper import hostnames, spec
    from rankmap.profiler import validate
    from rankmap.profiler.errors import UserError
    # as --ranks-per-node and --oversubscribe take them: 1.5 ranks per node was taken (and written
    # to machine.json, which no command then read back), oversubscribe=0 made 1, "1" a TypeError
    if ranks_per_node is not None:
        ranks_per_node = validate.integer(ranks_per_node, "ranks_per_node", "ranks per node", 1,
                                          validate.MAX_CORES_PER_NODE, float_form=False)
    oversubscribe = validate.integer(oversubscribe, "oversubscribe", "ranks per core", 1, validate.MAX_OVERSUBSCRIBE,
                                     float_form=False)
    if network is not None and not isinstance(network, (str, dict)):
        raise UserError(f"network {network!r:.60}: expected text as --network takes it ('fat-tree:4x8', "
                        "'dragonfly:4x4x2', 'torus:4x4', 'slurm:topology.conf')")
    if isinstance(network, dict):    # as machine.json holds it: checked as machine.json's (a KeyError before)
        spec._check_network(network, "network")
    if coords is not None and not isinstance(coords, (str, dict, os.PathLike)):
        raise UserError(f"coords {coords!r:.60}: expected a coordinate file (lines 'host x y z') or "
                        "{host: [x, y, z]}")
    if isinstance(coords, os.PathLike):
        coords = os.fspath(coords)
    if isinstance(node_topology, os.PathLike):      # an lstopo XML file given as a pathlib.Path
        node_topology = os.fspath(node_topology)
    if isinstance(nodes, str):
        hosts = hostnames.expand(nodes, f"nodes {nodes!r}")
    elif isinstance(nodes, (list, tuple)) and all(isinstance(h, str) for h in nodes):
        hosts = [hostnames.check_name(h, "nodes") for h in nodes]
    else:
        raise UserError(f"nodes {nodes!r:.60}: expected a hostlist such as 'n[1-4]' or a list of host names")
    hostnames.no_duplicates(hosts, "nodes")
    if isinstance(node_topology, str):
        topos = [node_topology]
    elif isinstance(node_topology, (list, tuple)) and node_topology and all(isinstance(t, str) for t in node_topology):
        topos = list(node_topology)
    else:
        raise UserError(f"node_topology {node_topology!r:.60}: expected 'pack:2 core:6', an lstopo XML file, or a "
                        "list of 'HOSTLIST=SPEC'")
    from rankmap.slurm.nodes import network_of     # 'slurm' and 'slurm:FILE' as --network takes them
    return spec.build(spec.make(hosts, topos, torus=torus, mesh=mesh, coords=coords, level_costs=level_costs,
                                hop_cost=hop_cost, ranks_per_node=ranks_per_node, oversubscribe=oversubscribe,
                                network=network_of(network, hosts) if isinstance(network, str) else network))


def map(traffic, machine, *, seed: int = 0, algorithm: str = "metis", time_limit=None):  # noqa: A001
    """Map the ranks onto the machine. Returns a result with `slot_of_rank` (a slot of the
    machine per rank), `cost` (the mapping cost), `chosen` (which start won) and `notes`.
    The same seed gives the same mapping."""
    from rankmap.mapper import solve
    from rankmap.profiler import validate
    traffic, machine = _as_traffic(traffic), _as_machine(machine)
    seed = validate.integer(seed, "seed", "seed", 0, 10 ** 9, float_form=False)     # what --seed takes
    if time_limit is not None:
        time_limit = validate.number(time_limit, "time_limit", "seconds", 0.0, lo_open=True)
    from rankmap.mapper import budget
    budget.check(traffic.bytes.nnz, traffic.size)     # as `rankmap map`: refused before anything is built
    from rankmap.mapper.allocation import cores_first
    sub = cores_first(machine, traffic.size)      # --oversubscribe: distinct cores first, as `rankmap map`
    if sub is None:
        return solve.solve(traffic, machine, algorithm=algorithm, seed=seed, time_limit=time_limit)
    res = solve.solve(traffic, sub[0], algorithm=algorithm, seed=seed, time_limit=time_limit)
    res.slot_of_rank = sub[1][res.slot_of_rank]    # slots of the machine given
    res.notes.insert(0, sub[2])
    return res


def _as_traffic(traffic):
    """traffic() of what map, evaluate and write are given: a matrix passed as it is was read
    by its numpy attributes (an 8 x 8 array's .size is 64: "64 ranks but only 8 slots")."""
    from rankmap.profiler.traffic import Traffic
    if isinstance(traffic, Traffic):
        return traffic
    if hasattr(traffic, "shape") or isinstance(traffic, (list, tuple)):
        return globals()["traffic"](traffic)
    from rankmap.profiler.errors import UserError
    raise UserError(f"traffic {traffic!r:.60}: expected rankmap.traffic(matrix) or rankmap.read_traffic(path)")


def _as_machine(machine):
    from rankmap.mapper.machine import Machine
    if isinstance(machine, Machine):
        return machine
    from rankmap.profiler.errors import UserError
    raise UserError(f"machine {machine!r:.60}: expected rankmap.machine(nodes, node_topology) (an AttributeError "
                    "from inside the mapper before)")


def evaluate(traffic, machine, slot_of_rank) -> dict:
    """The metrics of a mapping (docs/mapper.md): sum_com, hop-bytes, dilation, link loads,
    internode_fraction, ..."""
    from rankmap.mapper import metrics
    traffic, machine = _as_traffic(traffic), _as_machine(machine)
    return metrics.evaluate(traffic.bytes, machine, metrics.placement(slot_of_rank, machine, traffic.size))


def hosts(machine, slot_of_rank) -> list:
    """The host of each rank."""
    from rankmap.mapper import metrics
    machine = _as_machine(machine)
    return [machine.hosts[machine.slot_node[s]] for s in metrics.placement(slot_of_rank, machine)]


def write(out, traffic, machine, result, force: bool = False):
    """The mapping directory the launchers read (hostfile, binding.txt, rankfile,
    machinefile, collective-order.txt, report.json, machine.json). Returns its path."""
    import numpy as np
    from rankmap.mapper import metrics, report, spec, writers
    traffic, machine = _as_traffic(traffic), _as_machine(machine)
    if not hasattr(result, "slot_of_rank"):
        from rankmap.profiler.errors import UserError
        raise UserError(f"result {result!r:.60}: expected what rankmap.map() returns")
    if machine.spec is None:
        raise ValueError("write() needs a machine made by rankmap.machine() (it records its description)")
    # (named as this function's arguments: "pass --force" meant nothing to a script)
    target = writers.mapping_target(out, force, option="out", force_flag="force=True")
    slots = metrics.placement(result.slot_of_rank, machine, traffic.size)     # a list too (a TypeError below)
    # the cost on this machine: a result mapped onto another one (same slot count, other levels
    # or network) was written with that machine's cost, which `rankmap evaluate` then contradicts
    from rankmap.mapper.graph import from_traffic
    from rankmap.mapper.refine import Problem
    cost = Problem(from_traffic(traffic), machine).cost(np.asarray(slots, dtype=np.int64))
    notes = list(getattr(result, "notes", []))
    given = getattr(result, "cost", None)
    if given is not None and not np.isclose(cost, given, rtol=1e-9, atol=0):
        notes.append(f"the result's cost {given:.6g} is not its cost on this machine ({cost:.6g}): it was mapped "
                     "onto another machine; the cost here is this machine's")
    rep = {"cost": cost, "chosen": getattr(result, "chosen", None), "notes": notes,
           "metrics": report.compare(traffic.bytes, machine, {"rankmap": slots}, by_node=True)}
    return writers.write_mapping(target, slots, machine, rep, spec.frozen(machine.spec, machine, compact=True))
