"""The profiler's run file, defined once.

The C profiler's header (runfile.h) is generated from these tables when the native code is
built (csrc/profiler/genformat.py); the reader (rundir.py) makes its numpy record types
from the same tables. A block is a header, then `nsections` sections, each a section
header and its payload padded to 8 bytes (docs/formats.md). All integers little-endian;
every struct is naturally aligned with explicit padding fields, so C and numpy agree byte
for byte (the generated header checks each size with a static assertion)."""
from __future__ import annotations

MAGIC = b"RMPROF\x00\x01"
VERSION = 1

C_TYPES = {"char[8]": "S8", "uint16_t": "<u2", "uint32_t": "<u4", "int32_t": "<i4", "uint64_t": "<u8"}

# struct name -> [(field, C type)]
STRUCTS = {
    "rmp_block_header": [("magic", "char[8]"), ("version", "uint32_t"), ("header_size", "uint32_t"),
                         ("payload_size", "uint64_t"), ("crc", "uint32_t"), ("rank", "uint32_t"),
                         ("size", "uint32_t"), ("status", "uint32_t"), ("detail", "int32_t"), ("seq", "uint32_t"),
                         ("pid", "uint32_t"), ("nsections", "uint32_t"), ("reserved", "uint64_t")],
    "rmp_section_header": [("type", "uint32_t"), ("item", "uint32_t"), ("size", "uint64_t")],
    # section P2P: one row per (source, destination) pair this rank counted
    "rmp_p2p_row": [("src", "uint32_t"), ("dst", "uint32_t"), ("bytes", "uint64_t"), ("msgs", "uint64_t")],
    # section COLL: one row per (communicator group, operation, root, size bucket)
    "rmp_coll_row": [("group", "uint32_t"), ("op", "uint16_t"), ("bucket", "uint16_t"), ("root", "int32_t"),
                     ("pad", "uint32_t"), ("calls", "uint64_t"), ("bytes", "uint64_t")],
    # section END: these fields, then aff_words 64-bit words of the CPU mask at the end
    "rmp_end_fixed": [("t_start", "uint64_t"), ("t_end", "uint64_t"), ("cpu_end", "int32_t"),
                      ("numa_end", "int32_t"), ("unattr_bytes", "uint64_t"), ("unattr_msgs", "uint64_t"),
                      ("inter_coll", "uint64_t"), ("aff_words", "uint32_t"), ("pad", "uint32_t")],
}
SIZES = {"rmp_block_header": 64, "rmp_section_header": 16, "rmp_p2p_row": 24, "rmp_coll_row": 32,
         "rmp_end_fixed": 56}

# section types, in the order a block holds them
SECTIONS = {"META": 1, "END": 2, "P2P": 3, "GROUPS": 4, "COLL": 5}

# block status: C name -> (code, what the reader calls it)
STATUS = {"RUNNING": (1, "running"),                 # periodic snapshot, the rank was still running
          "FINALIZED": (2, "finalized"),             # written from MPI_Finalize: complete
          "ABORTED": (3, "aborted"),                 # MPI_Abort, detail = error code
          "EXIT": (4, "exit-without-finalize"),      # the process exited without MPI_Finalize
          "SIGNAL": (5, "signal")}                   # fatal signal, detail = signal number

# collective operations of the collective table
OPS = ["barrier", "bcast", "reduce", "allreduce", "scan", "exscan", "gather", "scatter", "allgather", "allgatherv",
       "alltoall", "reduce_scatter", "reduce_scatter_block"]


def dtype(struct: str):
    """The numpy record type of a struct."""
    import numpy as np
    dt = np.dtype([(name, C_TYPES[ctype]) for name, ctype in STRUCTS[struct]])
    assert dt.itemsize == SIZES[struct], struct
    return dt


def c_header() -> str:
    """runfile.h, for the C profiler."""
    out = ["/* Generated from profiler/runfile.py by csrc/profiler/genformat.py: do not edit. */",
           "#ifndef RMP_RUNFILE_H", "#define RMP_RUNFILE_H", "#include <stddef.h>", "#include <stdint.h>", "",
           "#define RMP_MAGIC {" + ", ".join(f"0x{b:02x}" for b in MAGIC) + "}",
           f"#define RMP_FORMAT_VERSION {VERSION}", ""]
    for name, fields in STRUCTS.items():
        out.append("typedef struct {")
        for f, ctype in fields:
            out.append(f"    char {f}[8];" if ctype == "char[8]" else f"    {ctype} {f};")
        out.append(f"}} {name};")
        out.append(f"_Static_assert(sizeof({name}) == {SIZES[name]}, \"{name}: layout differs from runfile.py\");")
        off = 0
        for f, ctype in fields:
            out.append(f"_Static_assert(offsetof({name}, {f}) == {off}, \"{name}.{f}: offset differs\");")
            off += int(C_TYPES[ctype][-1]) if ctype != "char[8]" else 8
        out.append("")
    out.append("enum { " + ", ".join(f"RMP_SEC_{k} = {v}" for k, v in SECTIONS.items()) + " };")
    out.append("enum { " + ", ".join(f"RMP_ST_{k} = {v[0]}" for k, v in STATUS.items()) + " };")
    out.append("enum { " + ", ".join(f"RMP_OP_{op.upper()} = {i}" for i, op in enumerate(OPS, 1)) + " };")
    out += ["", "#endif", ""]
    return "\n".join(out)
