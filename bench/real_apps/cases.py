"""What is run: each case is one application, one input, one process count.

Iterations are reduced with each application's documented inputs (NPB's inputlu.data,
inputbt.data, inputsp.data, inputft.data, mg.input; the proxies' command-line options;
HPCG's hpcg.dat) so that one capture takes minutes on one core, not hours: a traffic matrix
then holds fewer time steps of the same pattern, plus the set-up and verification phases in
a larger share than in a full run. Where an official class does not fit in memory when
every rank runs in one process, the case says which grid it uses instead (`what`).

GRAPHS: 512-4,096 ranks, traffic only (bench/data/apps; issue 9). TRACES: 16-256 ranks,
traced with their measured compute and replayed under every placement (issue 10)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Case:
    name: str                 # file stem: app-variant-ranks
    app: str                  # sources.APPS key
    target: str               # executable: 'lu.C' (NPB) or the app key
    ranks: int
    args: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict)    # files written next to the run: name -> text
    what: str = ""            # class / grid / iterations, in words
    npb: tuple = ()           # NPB (benchmark, class) to build
    smpi: list = field(default_factory=list)      # extra SMPI options ("fortran-units": see capture.py)
    done: tuple = ("stdout.txt", "")             # (file glob, regex) a finished run has written

    def describe(self) -> dict:
        return {"name": self.name, "app": self.app, "ranks": self.ranks, "program": self.target,
                "args": list(self.args), "input_files": dict(self.inputs), "what": self.what}


NPB_DONE = ("stdout.txt", r"Benchmark Completed")


def inputlu(itmax: int, nx: int, ny: int, nz: int) -> str:
    return ("c\nc***controls printing of the progress of iterations: ipr    inorm\n"
            f"  1  {itmax}\n"
            "c\nc***the maximum no. of pseudo-time steps to be performed: nitmax\n"
            f"  {itmax}\n"
            "c\nc***magnitude of the time step: dt\n  2.0e+00\n"
            "c\nc***relaxation factor for SSOR iterations: omega\n  1.2\n"
            "c\nc***tolerance levels for steady-state residuals: tolnwt(m),m=1,5\n"
            "  1.0e-08   1.0e-08   1.0e-08  1.0e-08  1.0e-08\n"
            "c\nc***number of grid points in xi and eta and zeta directions: nx   ny   nz\n"
            f"  {nx}  {ny}  {nz}\nc\n")


def inputbtsp(niter: int, dt: str, n: int) -> str:
    return f"{niter}  number of time steps\n{dt}  dt\n{n} {n} {n}\n"


def mginput(lt: int, n: int, nit: int) -> str:
    return f" {lt} = top level\n {n} {n} {n} = nx ny nz\n {nit} = nit\n 0 0 0 0 0 0 0 0 = debug_vec\n"


def inputft(niter: int, np: int) -> str:
    return f"{niter}  number of iterations\n1  layout type (1 = 1d)\n1 {np}  processor layout\n"


def hpcgdat(n: int) -> str:
    return f"HPCG benchmark input file\nrankmap bench/real_apps.py\n{n} {n} {n}\n0\n"


def cloverin(cells_x: int, cells_y: int, steps: int) -> str:
    # clover.in of the reference repository (its default deck) with the grid and the number of steps changed
    return ("*clover\n state 1 density=0.2 energy=1.0\n"
            " state 2 density=1.0 energy=2.5 geometry=rectangle xmin=0.0 xmax=5.0 ymin=0.0 ymax=2.0\n"
            f" x_cells={cells_x}\n y_cells={cells_y}\n xmin=0.0\n ymin=0.0\n xmax=10.0\n ymax=10.0\n"
            " initial_timestep=0.04\n timestep_rise=1.5\n max_timestep=0.04\n"
            f" end_step={steps}\n test_problem 2\n*endclover\n")


def factor3(p: int) -> tuple:
    """p = a*b*c with a >= b >= c as close as possible (a process grid)."""
    best = (p, 1, 1)
    for c in range(1, round(p ** (1 / 3)) + 2):
        if p % c:
            continue
        q = p // c
        for b in range(c, int(q ** 0.5) + 1):
            if q % b == 0:
                a = q // b
                if a >= b >= c and a - c < best[0] - best[2]:
                    best = (a, b, c)
    return best


def lu(cls: str, p: int, itmax: int, nz: int | None = None) -> Case:
    n = {"A": 64, "B": 102, "C": 162, "D": 408}[cls]
    z = nz or n
    tag = cls if z == n else f"{cls}z{z}"
    what = f"NPB LU class {cls} ({n}x{n}x{z}" + ("" if z == n else f"; class {cls}'s x-y grid, nz cut to {z}") + \
        f"), {itmax} SSOR iterations (inputlu.data)"
    return Case(f"npb-lu-{tag}-{p}", "npb", f"lu.{cls}", p, inputs={"inputlu.data": inputlu(itmax, n, n, z)},
                what=what, npb=("lu", cls), done=NPB_DONE)


def btsp(bench: str, cls: str, p: int, niter: int) -> Case:
    n = {"A": 64, "B": 102, "C": 162}[cls]
    dt = {"bt": {"A": "0.0008d0", "B": "0.0003d0", "C": "0.0001d0"},
          "sp": {"A": "0.0015d0", "B": "0.001d0", "C": "0.00067d0"}}[bench][cls]
    return Case(f"npb-{bench}-{cls}-{p}", "npb", f"{bench}.{cls}", p,
                inputs={f"input{bench}.data": inputbtsp(niter, dt, n)},
                what=f"NPB {bench.upper()} class {cls} ({n}^3), {niter} time steps (input{bench}.data)",
                npb=(bench, cls), done=NPB_DONE)


def mg(cls: str, p: int, nit: int) -> Case:
    n, lt = {"A": (256, 8), "B": (256, 8), "C": (512, 9)}[cls]
    return Case(f"npb-mg-{cls}-{p}", "npb", f"mg.{cls}", p, inputs={"mg.input": mginput(lt, n, nit)},
                what=f"NPB MG class {cls} ({n}^3), {nit} V-cycles (mg.input)", npb=("mg", cls), done=NPB_DONE)


def cg(cls: str, p: int) -> Case:
    it = {"S": 15, "W": 15, "A": 15, "B": 75, "C": 75}[cls]
    return Case(f"npb-cg-{cls}-{p}", "npb", f"cg.{cls}", p,
                what=f"NPB CG class {cls}, its {it} iterations (CG has no input file)", npb=("cg", cls), done=NPB_DONE)


# SMPI's default MPI_Alltoall posts all P^2 messages at once, and SimGrid's max-min solver then
# works on all of them at every completion: FT B's capture took 93 s at 128 ranks and did not
# end within an hour at 256 (29 minutes of CPU). Pairwise exchange (P-1 steps of P messages;
# P a power of two) captured it in 39 s with the same checksums. The trace records the
# MPI_Alltoall call, not the algorithm that ran it (as graphs.FAST_COLLECTIVES), and a
# replay runs its own; only the capture's crossbar time (simulated_seconds) differs.
FT_FAST_ALLTOALL = ["--cfg=smpi/alltoall:pair"]


def ft(cls: str, p: int, niter: int) -> Case:
    dims = {"A": "256x256x128", "B": "512x256x256", "C": "512^3"}[cls]
    return Case(f"npb-ft-{cls}-{p}", "npb", f"ft.{cls}", p, inputs={"inputft.data": inputft(niter, p)},
                what=f"NPB FT class {cls} ({dims}), {niter} iterations, 1-D layout 1x{p} (inputft.data)",
                npb=("ft", cls), done=NPB_DONE, smpi=list(FT_FAST_ALLTOALL) if p >= 256 else [])


def lulesh(p: int, s: int, iters: int) -> Case:
    side = round(p ** (1 / 3))
    assert side ** 3 == p
    # -q: LULESH prints nothing (its end is every rank's MPI_Finalize in the trace)
    return Case(f"lulesh-s{s}-{p}", "lulesh", "lulesh", p, args=["-s", str(s), "-i", str(iters), "-q"],
                what=f"LULESH 2, {s}^3 elements per rank ({side}^3 ranks), {iters} iterations")


def minife(p: int, n: int) -> Case:
    return Case(f"minife-{n}-{p}", "minife", "minife", p, args=[f"nx={n}", f"ny={n}", f"nz={n}"],
                what=f"miniFE, {n}^3 global grid, CG to its tolerance (at most 200 iterations)",
                done=("stdout.txt", r"Final Resid Norm"))


def hpcg(p: int, n: int) -> Case:
    return Case(f"hpcg-{n}-{p}", "hpcg", "hpcg", p, inputs={"hpcg.dat": hpcgdat(n)},
                what=f"HPCG 3.1, {n}^3 per rank, quick path (hpcg.dat run time 0: one CG set)",
                done=("HPCG-Benchmark_*.txt", r"Final Summary"))


def cloverleaf(p: int, cells: int, steps: int) -> Case:
    return Case(f"cloverleaf-{cells}-{p}", "cloverleaf", "cloverleaf", p, inputs={"clover.in": cloverin(cells, cells, steps)},
                what=f"CloverLeaf 2-D, {cells}x{cells} cells, {steps} steps (clover.in)", smpi=["fortran-units"],
                done=("clover.out", r"Clover is finishing"))


def miniamr(p: int, steps: int, refine: int = 4, max_blocks: int = 4000, num_vars: int = 20,
            start: float = -1.71) -> Case:
    """The README's example "one sphere moving diagonally" (a spheroid surface of half-size 1.7,
    moving 0.04 a step along the diagonal), on a factor3(p) grid of ranks. start: the sphere's
    centre coordinate at the first step: the README's -1.71 keeps it outside the unit cube
    for the first 18 steps (nothing refines in a short run); -0.91 is where it is at the
    README run's step 20, already cutting the mesh.

    max_blocks is allocated at start on every rank, (nx+2)(ny+2)(nz+2) doubles per variable
    per block as small mallocs (212 KB per block with 20 variables): under SMPI all ranks
    share one process, 4,000 blocks x 512 ranks did not fit in 24 GB. A rank of the
    512-rank graph holds at most ~70 blocks at any time with 3 refinement levels (~270 at
    64 ranks with 4 levels, measured: miniAMR prints it, "Max blocks on a processor")."""
    a, b, c = factor3(p)
    args = ["--num_refine", str(refine), "--max_blocks", str(max_blocks), "--npx", str(a), "--npy", str(b),
            "--npz", str(c), "--nx", "8", "--ny", "8", "--nz", "8", "--num_objects", "1",
            "--object", "2", "0", f"{start:g}", f"{start:g}", f"{start:g}", "0.04", "0.04", "0.04", "1.7", "1.7", "1.7",
            "0.0", "0.0", "0.0", "--num_tsteps", str(steps), "--checksum_freq", "4", "--num_vars", str(num_vars)]
    where = "" if start == -1.71 else f", centre starting at {start:g} (the README run's step {round((start + 1.71) / 0.04)})"
    return Case(f"miniamr-{steps}-{p}", "miniamr", "miniamr", p, args=args,
                what=f"miniAMR, one sphere moving diagonally (README example{where}), {a}x{b}x{c} ranks, 8^3 cells per "
                     f"block, {refine} refinement levels, {num_vars} variables, at most {max_blocks} blocks per rank, "
                     f"{steps} time steps",
                done=("stdout.txt", r"End report"))


def amr_graph(p: int) -> Case:
    """miniAMR for the graphs: the sphere already in the mesh, 3 levels, 10 variables, 200 blocks per
    rank at 512 ranks and fewer with more ranks (the same ~11 GB in all; memory: see miniamr)."""
    return miniamr(p, 8, refine=3, max_blocks=102400 // p, num_vars=10, start=-0.91)


# 512-4,096 ranks: traffic graphs for the mapper (issue 9), no compute timing needed
GRAPHS = [
    # 512-1,024 ranks
    lulesh(512, 8, 10), lulesh(1000, 8, 10), cloverleaf(512, 1920, 5), cloverleaf(1024, 1920, 5),
    lu("C", 512, 3), lu("C", 1024, 3), mg("B", 512, 4), mg("B", 1024, 4),
    btsp("bt", "B", 529, 3), btsp("sp", "B", 529, 3), amr_graph(512), cg("B", 512), hpcg(512, 16),
    # sizes in between, cheap to capture (SimGrid's cost grows faster than the ranks: lulesh-s8-512 30 s,
    # lulesh-s8-1000 759 s)
    lulesh(729, 8, 10), cloverleaf(768, 1920, 5), btsp("bt", "B", 784, 3), btsp("sp", "B", 784, 3),
    cloverleaf(1536, 3840, 3),
    # 1,024-2,048 ranks
    lulesh(1728, 6, 5), cloverleaf(2048, 3840, 3), lu("D", 2048, 2, nz=32), mg("B", 2048, 3),
    btsp("bt", "B", 1024, 3), btsp("sp", "B", 1024, 3), amr_graph(1024), cg("B", 1024),
    # 2,048-4,096 ranks
    lulesh(4096, 5, 3), cloverleaf(4096, 3840, 3), lu("D", 4096, 2, nz=32), mg("B", 4096, 2),
    amr_graph(2048),
    # miniFE last: SimGrid spends an hour per 512-rank run in its communication bookkeeping
    minife(512, 64), minife(1024, 80),
]

# 16-256 ranks: traced with compute, replayed under every placement (issue 10)
TRACES = [
    lu("C", 24, 5), lu("C", 120, 5),
    btsp("sp", "C", 16, 10), btsp("sp", "C", 81, 10),
    btsp("bt", "C", 16, 5), btsp("bt", "C", 64, 5),
    cg("B", 32), cg("B", 128), cg("B", 256),
    mg("B", 32, 4), mg("B", 128, 4),
    ft("B", 32, 3), ft("B", 128, 3), ft("B", 256, 3),
    lulesh(27, 20, 20), lulesh(125, 16, 20), lulesh(216, 16, 20),
    minife(32, 96), minife(128, 128),
    cloverleaf(32, 960, 10), cloverleaf(128, 1920, 10),
    hpcg(32, 24), hpcg(128, 16),
    # miniAMR allocates --max_blocks on every rank at start (212 KB each with 20 variables) and
    # all ranks share one process under SMPI: 4,000 x 32 ranks (27 GB) was killed for memory on
    # a 24 GB machine. 500 is miniAMR's own default (3.4 GB at 32 ranks), 125 at 128 ranks the
    # same 3.4 GB; the run stops with miniAMR's own error if a rank needs more.
    miniamr(32, 10, max_blocks=500), miniamr(128, 10, max_blocks=125),
]


# 16-64 ranks, NPB class A and small proxy inputs: the set whose captures and replays fit in
# about an hour on two shared cores (`--set quick`; the results in docs/real-apps.md)
QUICK = [
    lu("A", 16, 10), lu("A", 64, 10),
    btsp("sp", "A", 16, 10), btsp("sp", "A", 64, 10),
    btsp("bt", "A", 16, 5), btsp("bt", "A", 64, 5),
    cg("A", 16), cg("A", 64),
    mg("A", 16, 4), mg("A", 64, 4),
    lulesh(27, 12, 20), lulesh(64, 10, 20),
    cloverleaf(16, 480, 10), cloverleaf(64, 960, 10),
    minife(16, 64), minife(64, 96),
]

SETS = {"quick": QUICK, "full": TRACES}


def select(cases: list, only: str | None) -> list:
    """Cases whose name contains any of the comma-separated patterns (all without)."""
    if not only:
        return list(cases)
    pats = [p.strip() for p in only.split(",") if p.strip()]
    return [c for c in cases if any(p in c.name for p in pats)]
