/* rankmap profiler: the counting core.
 *
 * Independent of the binding layer: the generated MPI_* / Fortran entry points
 * (wrappers.c, fortran.c) call only the functions declared here.
 *
 * Hot path (point-to-point on any intracommunicator): one comparison for
 * MPI_COMM_WORLD, otherwise a thread-local direct-mapped cache of
 * communicator -> world-rank table, validated by a generation counter that is
 * bumped whenever a cached communicator is freed (MPI reuses handles at once).
 * Counters are a dense per-peer row (O(P) per rank, written out sparsely);
 * relaxed atomics only when the library runs MPI_THREAD_MULTIPLE.
 */
#ifndef RMP_CORE_H
#define RMP_CORE_H

#include <mpi.h>
#include <stdint.h>
#include <string.h>

#define RMP_EXPORT __attribute__((visibility("default")))
#define RMP_HIDDEN __attribute__((visibility("hidden")))
#define RMP_LIKELY(x) __builtin_expect(!!(x), 1)
#define RMP_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum { RMP_IDLE = 0, RMP_ACTIVE = 1, RMP_DONE = 2 };
enum { RMP_C = 0, RMP_F = 1 }; /* handle arrays hold C or Fortran handles */

/* Block status codes RMP_ST_*, collective operation codes RMP_OP_* and the on-disk
 * structs: generated from profiler/runfile.py (the run file's one definition). */
#include "runfile.h"

typedef struct {
    uint64_t bytes;
    uint64_t msgs;
} rmp_cell;

typedef struct rmp_comm_info {
    uint32_t size;          /* local size (remote size for an intercommunicator) */
    uint32_t group;         /* interned group id: its world ranks */
    const uint32_t *world;  /* rank in comm (remote group) -> world rank, UINT32_MAX if none */
    int local_rank;
    int inter;
    int topo_done;          /* neighbour list computed */
    int n_out;              /* out-neighbours (neighbourhood collectives) */
    int32_t *out;           /* world ranks, -1 for MPI_PROC_NULL */
} rmp_comm_info;

typedef struct {
    volatile int state;
    int multi; /* MPI_THREAD_MULTIPLE: counters need atomics */
    int rank, size;
    rmp_cell *sent; /* [size] bytes sent by this rank to each world rank */
    rmp_cell *got;  /* [size] one-sided gets: traffic from each world rank to this one */
    uint64_t gen;   /* bumped when a cached communicator is freed */
    uint64_t unattr_bytes, unattr_msgs;
    uint64_t inter_coll;
    int dirty; /* counters changed since the last block was written */
} rmp_globals;

RMP_HIDDEN extern rmp_globals rmp_g;

typedef struct {
    uint64_t key;
    uint64_t gen;
    rmp_comm_info *info;
} rmp_tls_slot;

#define RMP_TLS_SLOTS 64
RMP_HIDDEN extern __thread rmp_tls_slot rmp_tls_cache[RMP_TLS_SLOTS] __attribute__((tls_model("initial-exec")));

/* lifecycle (lifecycle.c) */
RMP_HIDDEN void rmp_start(void);
RMP_HIDDEN void rmp_abort_hook(int code);
RMP_HIDDEN void rmp_keep_data_on_fatal_win_errors(MPI_Win win);

#define RMP_ENTER()                                   \
    do {                                              \
        if (RMP_UNLIKELY(rmp_g.state == RMP_IDLE))    \
            rmp_start();                              \
    } while (0)

/* slow paths (core.c) */
RMP_HIDDEN rmp_comm_info *rmp_comm_lookup_slow(MPI_Comm comm, rmp_tls_slot *slot, uint64_t key);
RMP_HIDDEN void rmp_unattributed(uint64_t bytes);
RMP_HIDDEN uint64_t rmp_type_bytes(uint64_t count, MPI_Datatype type);

static inline uint64_t rmp_handle_key(const void *h, size_t n)
{
    uint64_t k = 0;
    memcpy(&k, h, n < sizeof k ? n : sizeof k);
    return k;
}

static inline rmp_comm_info *rmp_comm_info_of(MPI_Comm comm)
{
    uint64_t key = rmp_handle_key(&comm, sizeof comm);
    rmp_tls_slot *s = &rmp_tls_cache[(key * 0x9E3779B97F4A7C15ull) >> 58];
    if (RMP_LIKELY(s->key == key && s->gen == __atomic_load_n(&rmp_g.gen, __ATOMIC_ACQUIRE)))
        return s->info;
    return rmp_comm_lookup_slow(comm, s, key);
}

/* world rank of `rank` in comm (its remote group for an intercommunicator), -1 if none */
static inline int rmp_world_of(MPI_Comm comm, int rank)
{
    if (comm == MPI_COMM_WORLD)
        return (unsigned)rank < (unsigned)rmp_g.size ? rank : -1;
    rmp_comm_info *ci = rmp_comm_info_of(comm);
    if (RMP_UNLIKELY(ci == NULL || (unsigned)rank >= ci->size))
        return -1;
    uint32_t w = ci->world[rank];
    return w == UINT32_MAX ? -1 : (int)w;
}

static inline void rmp_add(rmp_cell *c, uint64_t bytes)
{
    if (RMP_UNLIKELY(!rmp_g.dirty)) /* read-mostly: threads do not bounce the line */
        rmp_g.dirty = 1;
    if (RMP_UNLIKELY(rmp_g.multi)) {
        __atomic_fetch_add(&c->bytes, bytes, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->msgs, 1, __ATOMIC_RELAXED);
    } else {
        c->bytes += bytes;
        c->msgs += 1;
    }
}

/* sizes of the predefined datatypes, filled at start: their handles are permanent,
 * so no invalidation is needed; anything else asks the library */
#define RMP_TYPE_SLOTS 256
typedef struct {
    uint64_t key;
    uint64_t size;
} rmp_type_slot;
RMP_HIDDEN extern rmp_type_slot rmp_types[RMP_TYPE_SLOTS];

static inline unsigned rmp_type_hash(uint64_t key) { return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 56); }

static inline uint64_t rmp_type_size(MPI_Datatype type)
{
    uint64_t key = rmp_handle_key(&type, sizeof type);
    const rmp_type_slot *t = &rmp_types[rmp_type_hash(key)];
    if (RMP_LIKELY(t->key == key))
        return t->size;
    int sz;
    if (RMP_LIKELY(PMPI_Type_size(type, &sz) == MPI_SUCCESS && sz != MPI_UNDEFINED))
        return (uint64_t)sz;
    return rmp_type_bytes(1, type);
}

/* a message of `count` elements of `type` to `dest` in comm, counted at the sender */
static inline void rmp_send(MPI_Comm comm, int dest, uint64_t count, MPI_Datatype type)
{
    if (RMP_UNLIKELY(rmp_g.state != RMP_ACTIVE) || dest == MPI_PROC_NULL)
        return;
    uint64_t bytes = count * rmp_type_size(type);
    int w = rmp_world_of(comm, dest);
    if (RMP_UNLIKELY(w < 0)) {
        rmp_unattributed(bytes);
        return;
    }
    rmp_add(&rmp_g.sent[w], bytes);
}

/* persistent requests */
RMP_HIDDEN void rmp_persist_init(MPI_Request req, MPI_Comm comm, int dest, uint64_t count, MPI_Datatype type);
RMP_HIDDEN void rmp_persist_start(MPI_Request req);
RMP_HIDDEN void rmp_persist_startall(int n, const void *reqs, int kind);
RMP_HIDDEN void rmp_persist_forget(MPI_Request req);

/* one-sided: is_get = 1 counts target -> origin */
RMP_HIDDEN void rmp_rma(MPI_Win win, int target, uint64_t count, MPI_Datatype type, int is_get);

/* collectives with exact pairs */
RMP_HIDDEN void rmp_gatherv(MPI_Comm comm, int root, const void *sendbuf, uint64_t count, MPI_Datatype type);
RMP_HIDDEN void rmp_neighbor_same(MPI_Comm comm, uint64_t count, MPI_Datatype type);
#define RMP_DECLARE_COUNTED(SFX, CT)                                                                   \
    RMP_HIDDEN void rmp_alltoallv##SFX(MPI_Comm comm, const void *sendbuf, const CT *scounts,           \
                                       MPI_Datatype stype, const CT *rcounts, MPI_Datatype rtype);      \
    RMP_HIDDEN void rmp_alltoallw##SFX(MPI_Comm comm, const void *sendbuf, const CT *scounts,           \
                                       const void *stypes, const CT *rcounts, const void *rtypes,       \
                                       int kind);                                                       \
    RMP_HIDDEN void rmp_scatterv##SFX(MPI_Comm comm, int root, const CT *scounts, MPI_Datatype stype);   \
    RMP_HIDDEN void rmp_neighbor_v##SFX(MPI_Comm comm, const CT *scounts, MPI_Datatype stype);          \
    RMP_HIDDEN void rmp_neighbor_w##SFX(MPI_Comm comm, const CT *scounts, const void *stypes, int kind); \
    RMP_HIDDEN void rmp_coll_sum##SFX(MPI_Comm comm, int op, const CT *counts, MPI_Datatype type);
RMP_DECLARE_COUNTED(_i, int)
RMP_DECLARE_COUNTED(_l, MPI_Count)

#define RMP_ALLTOALLV_I(...) rmp_alltoallv_i(__VA_ARGS__)
#define RMP_ALLTOALLV_L(...) rmp_alltoallv_l(__VA_ARGS__)
#define RMP_ALLTOALLW_I(...) rmp_alltoallw_i(__VA_ARGS__)
#define RMP_ALLTOALLW_L(...) rmp_alltoallw_l(__VA_ARGS__)
#define RMP_SCATTERV_I(...) rmp_scatterv_i(__VA_ARGS__)
#define RMP_SCATTERV_L(...) rmp_scatterv_l(__VA_ARGS__)
#define RMP_NEIGHBOR_V_I(...) rmp_neighbor_v_i(__VA_ARGS__)
#define RMP_NEIGHBOR_V_L(...) rmp_neighbor_v_l(__VA_ARGS__)
#define RMP_NEIGHBOR_W_I(...) rmp_neighbor_w_i(__VA_ARGS__)
#define RMP_NEIGHBOR_W_L(...) rmp_neighbor_w_l(__VA_ARGS__)
#define RMP_COLL_SUM_I(...) rmp_coll_sum_i(__VA_ARGS__)
#define RMP_COLL_SUM_L(...) rmp_coll_sum_l(__VA_ARGS__)

/* the per-communicator collective table */
RMP_HIDDEN void rmp_coll(MPI_Comm comm, int op, int root, uint64_t n);
RMP_HIDDEN void rmp_coll_typed(MPI_Comm comm, int op, int root, uint64_t count, MPI_Datatype type);
RMP_HIDDEN void rmp_coll_block(MPI_Comm comm, int op, int root, const void *sendbuf, uint64_t scount,
                               MPI_Datatype stype, uint64_t rcount, MPI_Datatype rtype);
RMP_HIDDEN void rmp_coll_scatter(MPI_Comm comm, int root, uint64_t scount, MPI_Datatype stype,
                                 const void *recvbuf, uint64_t rcount, MPI_Datatype rtype);

#endif
