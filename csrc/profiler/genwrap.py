#!/usr/bin/env python3
"""Generate the profiler's MPI entry points from one table.

Every wrapped call is one row of CALLS: its MPI-3.1 C parameter list and the
counting action (C code that calls the counting core in core.h). From that row
this script emits:

* the C binding           MPI_X(...)    -> action, PMPI_X(...)
* the MPI-4 large-count   MPI_X_c(...)  (only when the header is MPI >= 4: MPICH)
* Open MPI's Fortran      mpi_x_, mpi_x, mpi_x__, MPI_X, mpi_x_f08_
  bindings, which call PMPI_* internally and are invisible to a C-only tool;
  they convert handles with PMPI_*_f2c, run the same action, then forward to
  pmpi_x_ / pmpi_x_f08_ (weak references: resolved only if the program loaded
  Open MPI's Fortran libraries, which it did if it called us from Fortran).

Placeholder types in a parameter list: COUNT (int / MPI_Count), COUNTS
(const int[] / const MPI_Count[]), DISPLS (const int[] / const MPI_Aint[]).
"""
import re
import sys

# (name, params, action-before, action-after). Actions refer to parameters by name.
# TYPES_KIND / REQS_KIND become RMP_C or RMP_F: whether an array holds C or Fortran handles.
P2P = "const void *buf, COUNT count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm"
PERSIST = P2P + ", MPI_Request *request"
ONESIDED = ("const void *origin_addr, COUNT origin_count, MPI_Datatype origin_datatype, int target_rank, "
            "MPI_Aint target_disp, COUNT target_count, MPI_Datatype target_datatype")
GETSIDED = ONESIDED.replace("const void *origin_addr", "void *origin_addr")
GETACC = ("const void *origin_addr, COUNT origin_count, MPI_Datatype origin_datatype, void *result_addr, "
          "COUNT result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, "
          "COUNT target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win")
SEND_ACT = "rmp_send(comm, dest, (uint64_t)count, datatype);"

CALLS = [
    # --- point-to-point, counted at the sender -------------------------------------------------
    ("Send", P2P, SEND_ACT, None),
    ("Bsend", P2P, SEND_ACT, None),
    ("Ssend", P2P, SEND_ACT, None),
    ("Rsend", P2P, SEND_ACT, None),
    ("Isend", P2P + ", MPI_Request *request", SEND_ACT, None),
    ("Ibsend", P2P + ", MPI_Request *request", SEND_ACT, None),
    ("Issend", P2P + ", MPI_Request *request", SEND_ACT, None),
    ("Irsend", P2P + ", MPI_Request *request", SEND_ACT, None),
    ("Sendrecv", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, int dest, int sendtag, "
                 "void *recvbuf, COUNT recvcount, MPI_Datatype recvtype, int source, int recvtag, "
                 "MPI_Comm comm, MPI_Status *status",
     "rmp_send(comm, dest, (uint64_t)sendcount, sendtype);", None),
    ("Sendrecv_replace", "void *buf, COUNT count, MPI_Datatype datatype, int dest, int sendtag, "
                         "int source, int recvtag, MPI_Comm comm, MPI_Status *status", SEND_ACT, None),
    # --- persistent requests: remembered at *_init, counted at every Start/Startall ------------
    ("Send_init", PERSIST, None, "if (rc == MPI_SUCCESS) rmp_persist_init(*request, comm, dest, (uint64_t)count, datatype);"),
    ("Bsend_init", PERSIST, None, "if (rc == MPI_SUCCESS) rmp_persist_init(*request, comm, dest, (uint64_t)count, datatype);"),
    ("Ssend_init", PERSIST, None, "if (rc == MPI_SUCCESS) rmp_persist_init(*request, comm, dest, (uint64_t)count, datatype);"),
    ("Rsend_init", PERSIST, None, "if (rc == MPI_SUCCESS) rmp_persist_init(*request, comm, dest, (uint64_t)count, datatype);"),
    ("Start", "MPI_Request *request", "rmp_persist_start(*request);", None),
    ("Startall", "int count, MPI_Request array_of_requests[]",
     "rmp_persist_startall(count, array_of_requests, REQS_KIND);", None),
    ("Request_free", "MPI_Request *request", "rmp_persist_forget(*request);", None),
    # --- one-sided (origin counts; a get is traffic target -> origin) ------------------------------
    ("Put", ONESIDED + ", MPI_Win win", "rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 0);", None),
    ("Rput", ONESIDED + ", MPI_Win win, MPI_Request *request",
     "rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 0);", None),
    ("Get", GETSIDED + ", MPI_Win win", "rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 1);", None),
    ("Rget", GETSIDED + ", MPI_Win win, MPI_Request *request",
     "rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 1);", None),
    ("Accumulate", ONESIDED + ", MPI_Op op, MPI_Win win",
     "rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 0);", None),
    ("Raccumulate", ONESIDED + ", MPI_Op op, MPI_Win win, MPI_Request *request",
     "rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 0);", None),
    ("Get_accumulate", GETACC,
     "if (op != MPI_NO_OP) rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 0);"
     " rmp_rma(win, target_rank, (uint64_t)result_count, result_datatype, 1);", None),
    ("Rget_accumulate", GETACC + ", MPI_Request *request",
     "if (op != MPI_NO_OP) rmp_rma(win, target_rank, (uint64_t)origin_count, origin_datatype, 0);"
     " rmp_rma(win, target_rank, (uint64_t)result_count, result_datatype, 1);", None),
    ("Fetch_and_op", "const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank, "
                     "MPI_Aint target_disp, MPI_Op op, MPI_Win win",
     "if (op != MPI_NO_OP) rmp_rma(win, target_rank, 1, datatype, 0); rmp_rma(win, target_rank, 1, datatype, 1);", None),
    ("Compare_and_swap", "const void *origin_addr, const void *compare_addr, void *result_addr, "
                         "MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win",
     "rmp_rma(win, target_rank, 2, datatype, 0); rmp_rma(win, target_rank, 1, datatype, 1);", None),
    # --- collectives whose pairs are exact: counted as point-to-point -----------------------------
    ("Alltoallv", "const void *sendbuf, COUNTS sendcounts, DISPLS sdispls, MPI_Datatype sendtype, "
                  "void *recvbuf, COUNTS recvcounts, DISPLS rdispls, MPI_Datatype recvtype, MPI_Comm comm",
     "RMP_ALLTOALLV(comm, sendbuf, sendcounts, sendtype, recvcounts, recvtype);", None),
    ("Ialltoallv", "const void *sendbuf, COUNTS sendcounts, DISPLS sdispls, MPI_Datatype sendtype, "
                   "void *recvbuf, COUNTS recvcounts, DISPLS rdispls, MPI_Datatype recvtype, MPI_Comm comm, "
                   "MPI_Request *request",
     "RMP_ALLTOALLV(comm, sendbuf, sendcounts, sendtype, recvcounts, recvtype);", None),
    ("Alltoallw", "const void *sendbuf, COUNTS sendcounts, DISPLS sdispls, const MPI_Datatype sendtypes[], "
                  "void *recvbuf, COUNTS recvcounts, DISPLS rdispls, const MPI_Datatype recvtypes[], MPI_Comm comm",
     "RMP_ALLTOALLW(comm, sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, TYPES_KIND);", None),
    ("Ialltoallw", "const void *sendbuf, COUNTS sendcounts, DISPLS sdispls, const MPI_Datatype sendtypes[], "
                   "void *recvbuf, COUNTS recvcounts, DISPLS rdispls, const MPI_Datatype recvtypes[], "
                   "MPI_Comm comm, MPI_Request *request",
     "RMP_ALLTOALLW(comm, sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, TYPES_KIND);", None),
    ("Gatherv", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                "COUNTS recvcounts, DISPLS displs, MPI_Datatype recvtype, int root, MPI_Comm comm",
     "rmp_gatherv(comm, root, sendbuf, (uint64_t)sendcount, sendtype);", None),
    ("Igatherv", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                 "COUNTS recvcounts, DISPLS displs, MPI_Datatype recvtype, int root, MPI_Comm comm, "
                 "MPI_Request *request",
     "rmp_gatherv(comm, root, sendbuf, (uint64_t)sendcount, sendtype);", None),
    ("Scatterv", "const void *sendbuf, COUNTS sendcounts, DISPLS displs, MPI_Datatype sendtype, "
                 "void *recvbuf, COUNT recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm",
     "RMP_SCATTERV(comm, root, sendcounts, sendtype);", None),
    ("Iscatterv", "const void *sendbuf, COUNTS sendcounts, DISPLS displs, MPI_Datatype sendtype, "
                  "void *recvbuf, COUNT recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, "
                  "MPI_Request *request",
     "RMP_SCATTERV(comm, root, sendcounts, sendtype);", None),
    # --- neighbourhood collectives: exact pairs from the communicator's topology ------------------
    ("Neighbor_allgather", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                           "COUNT recvcount, MPI_Datatype recvtype, MPI_Comm comm",
     "rmp_neighbor_same(comm, (uint64_t)sendcount, sendtype);", None),
    ("Ineighbor_allgather", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                            "COUNT recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request",
     "rmp_neighbor_same(comm, (uint64_t)sendcount, sendtype);", None),
    ("Neighbor_allgatherv", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                            "COUNTS recvcounts, DISPLS displs, MPI_Datatype recvtype, MPI_Comm comm",
     "rmp_neighbor_same(comm, (uint64_t)sendcount, sendtype);", None),
    ("Ineighbor_allgatherv", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                             "COUNTS recvcounts, DISPLS displs, MPI_Datatype recvtype, MPI_Comm comm, "
                             "MPI_Request *request",
     "rmp_neighbor_same(comm, (uint64_t)sendcount, sendtype);", None),
    ("Neighbor_alltoall", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                          "COUNT recvcount, MPI_Datatype recvtype, MPI_Comm comm",
     "rmp_neighbor_same(comm, (uint64_t)sendcount, sendtype);", None),
    ("Ineighbor_alltoall", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                           "COUNT recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request",
     "rmp_neighbor_same(comm, (uint64_t)sendcount, sendtype);", None),
    ("Neighbor_alltoallv", "const void *sendbuf, COUNTS sendcounts, DISPLS sdispls, MPI_Datatype sendtype, "
                           "void *recvbuf, COUNTS recvcounts, DISPLS rdispls, MPI_Datatype recvtype, MPI_Comm comm",
     "RMP_NEIGHBOR_V(comm, sendcounts, sendtype);", None),
    ("Ineighbor_alltoallv", "const void *sendbuf, COUNTS sendcounts, DISPLS sdispls, MPI_Datatype sendtype, "
                            "void *recvbuf, COUNTS recvcounts, DISPLS rdispls, MPI_Datatype recvtype, "
                            "MPI_Comm comm, MPI_Request *request",
     "RMP_NEIGHBOR_V(comm, sendcounts, sendtype);", None),
    ("Neighbor_alltoallw", "const void *sendbuf, COUNTS sendcounts, const MPI_Aint sdispls[], "
                           "const MPI_Datatype sendtypes[], void *recvbuf, COUNTS recvcounts, "
                           "const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm",
     "RMP_NEIGHBOR_W(comm, sendcounts, sendtypes, TYPES_KIND);", None),
    ("Ineighbor_alltoallw", "const void *sendbuf, COUNTS sendcounts, const MPI_Aint sdispls[], "
                            "const MPI_Datatype sendtypes[], void *recvbuf, COUNTS recvcounts, "
                            "const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, "
                            "MPI_Request *request",
     "RMP_NEIGHBOR_W(comm, sendcounts, sendtypes, TYPES_KIND);", None),
]

# --- collectives recorded in the per-communicator table (expanded later by an algorithm model) ---
# n = the size that the algorithm models take (see docs/formats.md, "collective table").
COLL = [
    ("Barrier", "MPI_Comm comm", "rmp_coll(comm, RMP_OP_BARRIER, -1, 0);"),
    ("Bcast", "void *buffer, COUNT count, MPI_Datatype datatype, int root, MPI_Comm comm",
     "rmp_coll_typed(comm, RMP_OP_BCAST, root, (uint64_t)count, datatype);"),
    ("Reduce", "const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm",
     "rmp_coll_typed(comm, RMP_OP_REDUCE, root, (uint64_t)count, datatype);"),
    ("Allreduce", "const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     "rmp_coll_typed(comm, RMP_OP_ALLREDUCE, -1, (uint64_t)count, datatype);"),
    ("Scan", "const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     "rmp_coll_typed(comm, RMP_OP_SCAN, -1, (uint64_t)count, datatype);"),
    ("Exscan", "const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     "rmp_coll_typed(comm, RMP_OP_EXSCAN, -1, (uint64_t)count, datatype);"),
    ("Gather", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, COUNT recvcount, "
               "MPI_Datatype recvtype, int root, MPI_Comm comm",
     "rmp_coll_block(comm, RMP_OP_GATHER, root, sendbuf, (uint64_t)sendcount, sendtype, (uint64_t)recvcount, recvtype);"),
    ("Scatter", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, COUNT recvcount, "
                "MPI_Datatype recvtype, int root, MPI_Comm comm",
     "rmp_coll_scatter(comm, root, (uint64_t)sendcount, sendtype, recvbuf, (uint64_t)recvcount, recvtype);"),
    ("Allgather", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, COUNT recvcount, "
                  "MPI_Datatype recvtype, MPI_Comm comm",
     "rmp_coll_block(comm, RMP_OP_ALLGATHER, -1, sendbuf, (uint64_t)sendcount, sendtype, (uint64_t)recvcount, recvtype);"),
    ("Allgatherv", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, COUNTS recvcounts, "
                   "DISPLS displs, MPI_Datatype recvtype, MPI_Comm comm",
     "RMP_COLL_SUM(comm, RMP_OP_ALLGATHERV, recvcounts, recvtype);"),
    ("Alltoall", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, COUNT recvcount, "
                 "MPI_Datatype recvtype, MPI_Comm comm",
     "rmp_coll_block(comm, RMP_OP_ALLTOALL, -1, sendbuf, (uint64_t)sendcount, sendtype, (uint64_t)recvcount, recvtype);"),
    ("Reduce_scatter", "const void *sendbuf, void *recvbuf, COUNTS recvcounts, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     "RMP_COLL_SUM(comm, RMP_OP_REDUCE_SCATTER, recvcounts, datatype);"),
    ("Reduce_scatter_block", "const void *sendbuf, void *recvbuf, COUNT recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     "rmp_coll_typed(comm, RMP_OP_REDUCE_SCATTER_BLOCK, -1, (uint64_t)recvcount, datatype);"),
]
for name, params, act in COLL:
    CALLS.append((name, params, act, None))
    # the nonblocking twin has the same traffic
    CALLS.append(("I" + name.lower(), params + ", MPI_Request *request", act, None))

# MPI-4.0 calls (MPICH >= 4; Open MPI 4.1 has none of them), emitted with their large-count twins
MPI4_CALLS = [
    ("Isendrecv", "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, int dest, int sendtag, "
                  "void *recvbuf, COUNT recvcount, MPI_Datatype recvtype, int source, int recvtag, "
                  "MPI_Comm comm, MPI_Request *request",
     "rmp_send(comm, dest, (uint64_t)sendcount, sendtype);", None),
    ("Isendrecv_replace", "void *buf, COUNT count, MPI_Datatype datatype, int dest, int sendtag, "
                          "int source, int recvtag, MPI_Comm comm, MPI_Request *request", SEND_ACT, None),
]

# Fortran-only lifecycle hooks (the C side starts lazily and finalizes through an MPI_COMM_SELF attribute).
FORTRAN_LIFECYCLE = '''
RMP_EXPORT void {c}(MPI_Fint *ierr) {{ RMP_FCALL(pmpi_init, (ierr)); rmp_start(); }}
RMP_EXPORT void {ct}(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {{ RMP_FCALL(pmpi_init_thread, (required, provided, ierr)); rmp_start(); }}
RMP_EXPORT void {a}(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr) {{ rmp_abort_hook(*errorcode); RMP_FCALL(pmpi_abort, (comm, errorcode, ierr)); }}
'''


def cname(name):
    return name[0].upper() + name[1:]


def split_params(params):
    out = []
    for p in params.split(","):
        p = p.strip()
        m = re.match(r"(.*?)([A-Za-z_][A-Za-z_0-9]*)(\[\])?$", p)
        ctype, pname, arr = m.group(1).strip(), m.group(2), m.group(3)
        if arr:
            ctype += " []"
        out.append((ctype, pname))
    return out


def concrete(ctype, large):
    table = {
        "COUNT": "MPI_Count" if large else "int",
        "COUNTS": "const MPI_Count []" if large else "const int []",
        "DISPLS": "const MPI_Aint []" if large else "const int []",
    }
    return table.get(ctype, ctype)


def decl(ctype, pname):
    if ctype.endswith("[]"):
        return f"{ctype[:-2].strip()} {pname}[]"
    if ctype.endswith("*"):
        return f"{ctype}{pname}"
    return f"{ctype} {pname}"


def c_wrapper(name, params, before, after, large):
    suffix = "_c" if large else ""
    plist = [(concrete(t, large), n) for t, n in split_params(params)]
    sig = ", ".join(decl(t, n) for t, n in plist)
    args = ", ".join(n for _, n in plist)
    kinds = {"TYPES_KIND": "RMP_C", "REQS_KIND": "RMP_C"}
    macro_sfx = "_L" if large else "_I"
    body = ["    RMP_ENTER();"]
    for act in (before,):
        if act:
            body.append("    { " + fix(act, kinds, macro_sfx) + " }")
    body.append(f"    int rc = PMPI_{name}{suffix}({args});")
    if after:
        body.append("    { " + fix(after, kinds, macro_sfx) + " }")
    body.append("    return rc;")
    return f"RMP_EXPORT int MPI_{name}{suffix}({sig})\n{{\n" + "\n".join(body) + "\n}\n"


def fix(act, kinds, macro_sfx):
    for k, v in kinds.items():
        act = act.replace(k, v)
    # macros over count arrays take the element type: _I (int) or _L (MPI_Count)
    return re.sub(r"\b(RMP_[A-Z_]+?)\(", lambda m: (m.group(1) + macro_sfx + "(")
                  if m.group(1) in ARRAY_MACROS else m.group(0), act)


ARRAY_MACROS = {"RMP_ALLTOALLV", "RMP_ALLTOALLW", "RMP_SCATTERV", "RMP_NEIGHBOR_V", "RMP_NEIGHBOR_W", "RMP_COLL_SUM"}


# MPICH's Fortran library reaches these through PMPI_* directly (its mpi_f08 path): wrap
# their f08 entry points and forward to the library's own (found with dlsym(RTLD_NEXT)).
MPICH_F08 = ["Start", "Startall", "Request_free", "Barrier", "Ibarrier"]


def f_wrapper(name, params, before, after, mpich_f08=False):
    """Fortran binding: Open MPI's mpif.h / use mpi / use mpi_f08 entry points, or (mpich_f08)
    MPICH's mpi_f08 one. All share this argument layout: everything by reference."""
    plist = [(concrete(t, False), n) for t, n in split_params(params)]
    fargs = []          # Fortran-side parameters
    conv_before, conv_after = [], []
    used_b = before or ""
    used_a = after or ""

    def uses(act, n):
        return re.search(r"\b%s\b" % re.escape(n), act) is not None

    for t, n in plist:
        fn = "f_" + n
        if t in ("const void *", "void *"):
            fargs.append(f"void *{fn}")
            conv_before.append(f"const void *{n} = rmp_f_buf({fn}); (void){n};")
        elif t == "int":
            fargs.append(f"MPI_Fint *{fn}")
            conv_before.append(f"int {n} = (int)*{fn}; (void){n};")
        elif t == "MPI_Aint":
            fargs.append(f"MPI_Aint *{fn}")
        elif t in ("MPI_Datatype", "MPI_Comm", "MPI_Win", "MPI_Op"):
            kind = {"MPI_Datatype": "Type"}.get(t, t[4:])
            fargs.append(f"MPI_Fint *{fn}")
            if uses(used_b, n) or uses(used_a, n):
                conv_before.append(f"{t} {n} = PMPI_{kind}_f2c(*{fn});")
        elif t == "MPI_Request *":
            fargs.append(f"MPI_Fint *{fn}")
            if uses(used_b, n):
                conv_before.append(f"MPI_Request {n}_v = PMPI_Request_f2c(*{fn}); MPI_Request *{n} = &{n}_v;")
            elif uses(used_a, n):
                conv_before.append(f"MPI_Request {n}_v; MPI_Request *{n} = &{n}_v;")
            if uses(used_a, n):
                conv_after.append(f"{n}_v = PMPI_Request_f2c(*{fn});")
        elif t == "MPI_Status *":
            fargs.append(f"MPI_Fint *{fn}")
        elif t == "const int []":
            fargs.append(f"MPI_Fint *{fn}")
            conv_before.append(f"const int *{n} = (const int *){fn}; (void){n};")
        elif t == "const MPI_Aint []":
            fargs.append(f"MPI_Aint *{fn}")
        elif t in ("const MPI_Datatype []", "MPI_Request []"):
            fargs.append(f"MPI_Fint *{fn}")
            conv_before.append(f"const MPI_Fint *{n} = {fn}; (void){n};")
        else:
            raise SystemExit(f"genwrap: no Fortran rule for {t} in {name}")
    fargs.append("MPI_Fint *ierr")
    fwd = ", ".join(a.split()[-1].lstrip("*") for a in fargs)
    kinds = {"TYPES_KIND": "RMP_F", "REQS_KIND": "RMP_F"}
    lines = ["    RMP_ENTER();"] + ["    " + c for c in conv_before]
    if before:
        lines.append("    { " + fix(before, kinds, "_I") + " }")
    lines.append("    RMP_FCALL(%s, (%s));" % ("pmpi_" + name.lower(), fwd))
    if after:
        lines.append("    int rc = (ierr == NULL || *ierr == MPI_SUCCESS) ? MPI_SUCCESS : MPI_ERR_OTHER;")
        lines += ["    " + c for c in conv_after]
        lines.append("    { " + fix(after, kinds, "_I") + " }")
    body = "\n".join(lines)
    sig = ", ".join(fargs)
    low = name.lower()
    if mpich_f08:
        body = body.replace("RMP_FCALL(pmpi_%s, (" % low,
                            "RMP_FNEXT(mpi_%s_f08_, (%s), (" % (low, sig))
        return f"RMP_EXPORT void mpi_{low}_f08_({sig})\n{{\n{body}\n}}\n"
    out = [f"static void rmp_f_{low}({sig})\n{{\n{body}\n}}\n"]
    for sym in (f"mpi_{low}", f"mpi_{low}_", f"mpi_{low}__", f"MPI_{low.upper()}"):
        out.append(f"RMP_EXPORT void {sym}({sig}) {{ rmp_f_{low}({fwd}); }}")
    # use mpi_f08: its own entry points, same layout, forwarding to pmpi_<name>_f08_
    f08body = body.replace("RMP_FCALL(pmpi_%s," % low, "RMP_FCALL(pmpi_%s_f08," % low)
    out.append(f"RMP_EXPORT void mpi_{low}_f08_({sig})\n{{\n{f08body}\n}}\n")
    return "\n".join(out) + "\n"


def weak_decls(names):
    out = []
    for n in names:
        out.append(f"extern void pmpi_{n}_() __attribute__((weak));")
        out.append(f"extern void pmpi_{n}_f08_() __attribute__((weak));")
    return "\n".join(out)


def main():
    mode, path = sys.argv[1], sys.argv[2]
    hdr = "/* Generated by csrc/profiler/genwrap.py from its table. Do not edit. */\n"
    if mode == "c":
        parts = [hdr, '#include "core.h"\n']
        for name, params, before, after in CALLS:
            parts.append(c_wrapper(name, params, before, after, False))
        parts.append("#if MPI_VERSION >= 4 && !defined(OPEN_MPI)\n/* MPI-4 large-count variants (MPICH >= 4) */\n")
        for name, params, before, after in CALLS:
            if "COUNT" in params:
                parts.append(c_wrapper(name, params, before, after, True))
        parts.append("/* MPI-4.0 calls: a program that used them was profiled as complete without their bytes */\n")
        for name, params, before, after in MPI4_CALLS:
            parts.append(c_wrapper(name, params, before, after, False))
            parts.append(c_wrapper(name, params, before, after, True))
        parts.append("#endif\n")
    elif mode == "fortran":
        parts = [hdr, '#include "core.h"\n#include "fortran.h"\n#ifdef OPEN_MPI\n']
        names = [n.lower() for n, *_ in CALLS] + ["init", "init_thread", "abort"]
        parts.append(weak_decls(names) + "\n")
        for name, params, before, after in CALLS:
            parts.append(f_wrapper(name, params, before, after))
        for suffix in ("", "_", "__"):
            parts.append(FORTRAN_LIFECYCLE.format(c="mpi_init" + suffix, ct="mpi_init_thread" + suffix,
                                                  a="mpi_abort" + suffix))
        parts.append(FORTRAN_LIFECYCLE.format(c="MPI_INIT", ct="MPI_INIT_THREAD", a="MPI_ABORT"))
        parts.append(FORTRAN_LIFECYCLE.format(c="mpi_init_f08_", ct="mpi_init_thread_f08_", a="mpi_abort_f08_")
                     .replace("pmpi_init,", "pmpi_init_f08,").replace("pmpi_init_thread,", "pmpi_init_thread_f08,")
                     .replace("pmpi_abort,", "pmpi_abort_f08,"))
        parts.append("#endif /* OPEN_MPI */\n")
        parts.append("#if defined(MPICH) && !defined(OPEN_MPI)\n")
        table = {n: (p, b, a) for n, p, b, a in CALLS}
        for name in MPICH_F08:
            params, before, after = table[name]
            parts.append(f_wrapper(name, params, before, after, mpich_f08=True))
        parts.append("#endif /* MPICH */\n")
    else:
        raise SystemExit("usage: genwrap.py c|fortran OUT")
    with open(path, "w") as f:
        f.write("\n".join(parts))


if __name__ == "__main__":
    main()
