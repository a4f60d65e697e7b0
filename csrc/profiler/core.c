/* rankmap profiler: counting core (slow paths, communicator/window translation,
 * collective table, persistent requests). See core.h for the design. */
#include "state.h"

#include <stdlib.h>

rmp_globals rmp_g = {.gen = 1};
rmp_private rmp_p = {.lock = PTHREAD_MUTEX_INITIALIZER, .snap_lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};
__thread rmp_tls_slot rmp_tls_cache[RMP_TLS_SLOTS] __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------------ buffers */

int rmp_buf_append(rmp_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *d = malloc(cap);
        if (d == NULL)
            return -1;
        if (b->len)
            memcpy(d, b->data, b->len);
        /* The old buffer is deliberately not freed: a signal handler may be
         * reading it. Growth is geometric, so what stays behind is < the final size. */
        __atomic_store_n(&b->data, d, __ATOMIC_RELEASE);
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    __atomic_store_n(&b->len, b->len + n, __ATOMIC_RELEASE);
    return 0;
}

/* ------------------------------------------------------------------ groups */

typedef struct {
    uint64_t hash;
    uint32_t id, n;
    const uint32_t *world;
} group_ent;

static group_ent *gtab; /* open addressing, power-of-two size */
static size_t gtab_cap, gtab_used;
static uint32_t next_group_id;

static uint64_t hash_u32s(const uint32_t *w, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1; /* 0 marks an empty slot */
}

static int gtab_insert(group_ent e)
{
    if (2 * (gtab_used + 1) > gtab_cap) {
        size_t ncap = gtab_cap ? 2 * gtab_cap : 64;
        group_ent *nt = calloc(ncap, sizeof *nt);
        if (nt == NULL)
            return -1;
        for (size_t i = 0; i < gtab_cap; i++)
            if (gtab[i].hash) {
                size_t j = gtab[i].hash & (ncap - 1);
                while (nt[j].hash)
                    j = (j + 1) & (ncap - 1);
                nt[j] = gtab[i];
            }
        free(gtab);
        gtab = nt;
        gtab_cap = ncap;
    }
    size_t j = e.hash & (gtab_cap - 1);
    while (gtab[j].hash)
        j = (j + 1) & (gtab_cap - 1);
    gtab[j] = e;
    gtab_used++;
    return 0;
}

/* Serialize one group into section GROUPS: {id, size, flags, pad} then the world ranks. */
static int groups_emit(uint32_t id, const uint32_t *world, uint32_t n, int identity)
{
    uint32_t hdr[4] = {id, n, identity ? 1u : 0u, 0};
    if (rmp_buf_append(&rmp_p.groups, hdr, sizeof hdr))
        return -1;
    if (!identity) {
        if (rmp_buf_append(&rmp_p.groups, world, (size_t)n * 4))
            return -1;
        if (n & 1) {
            uint32_t pad = 0;
            if (rmp_buf_append(&rmp_p.groups, &pad, 4))
                return -1;
        }
    }
    return 0;
}

/* Returns the id of the group with these world ranks; `world` must stay valid
 * (the caller hands over ownership when a new group is created: *owned = 1). */
static uint32_t group_intern_owned(uint32_t *world, uint32_t n, int *owned, const uint32_t **persist)
{
    uint64_t h = hash_u32s(world, n);
    *owned = 0;
    for (size_t j = gtab_cap ? (h & (gtab_cap - 1)) : 0; gtab_cap && gtab[j].hash; j = (j + 1) & (gtab_cap - 1))
        if (gtab[j].hash == h && gtab[j].n == n && memcmp(gtab[j].world, world, (size_t)n * 4) == 0) {
            *persist = gtab[j].world;
            return gtab[j].id;
        }
    uint32_t id = next_group_id++;
    group_ent e = {h, id, n, world};
    if (gtab_insert(e) || groups_emit(id, world, n, world == rmp_p.identity))
        return UINT32_MAX;
    *owned = 1;
    *persist = world;
    return id;
}

uint32_t rmp_group_intern(const uint32_t *world, uint32_t n)
{
    uint32_t *copy = malloc((size_t)n * 4 + 4);
    const uint32_t *persist;
    int owned;
    if (copy == NULL)
        return UINT32_MAX;
    memcpy(copy, world, (size_t)n * 4);
    uint32_t id = group_intern_owned(copy, n, &owned, &persist);
    if (!owned)
        free(copy);
    return id;
}

/* ------------------------------------------------------------------ communicators */

static int comm_delete_cb(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    rmp_comm_info *ci = val;
    /* invalidate every thread's cached entry before the memory goes */
    __atomic_add_fetch(&rmp_g.gen, 1, __ATOMIC_RELEASE);
    if (ci) {
        free(ci->out);
        free(ci);
    }
    return MPI_SUCCESS;
}

static int win_delete_cb(MPI_Win win, int keyval, void *val, void *extra)
{
    (void)win, (void)keyval, (void)extra;
    free(val);
    return MPI_SUCCESS;
}

/* Translate a group to world ranks (caller holds the lock). */
static rmp_comm_info *info_from_group(MPI_Group g, int local_rank, int inter)
{
    int n = 0, cmp = MPI_UNEQUAL;
    if (PMPI_Group_size(g, &n) != MPI_SUCCESS || n < 0)
        return NULL;
    rmp_comm_info *ci = calloc(1, sizeof *ci);
    if (ci == NULL)
        return NULL;
    ci->size = (uint32_t)n;
    ci->local_rank = local_rank;
    ci->inter = inter;
    PMPI_Group_compare(g, rmp_p.world_group, &cmp);
    if (cmp == MPI_IDENT) {
        ci->group = 0;
        ci->world = rmp_p.identity;
        return ci;
    }
    int *idx = malloc((size_t)n * sizeof(int) + 1), *out = malloc((size_t)n * sizeof(int) + 1);
    if (idx == NULL || out == NULL)
        goto fail;
    for (int i = 0; i < n; i++)
        idx[i] = i;
    if (PMPI_Group_translate_ranks(g, n, idx, rmp_p.world_group, out) != MPI_SUCCESS)
        goto fail;
    uint32_t *w = (uint32_t *)out;
    for (int i = 0; i < n; i++)
        w[i] = out[i] == MPI_UNDEFINED ? UINT32_MAX : (uint32_t)out[i];
    int owned;
    const uint32_t *persist;
    ci->group = group_intern_owned(w, (uint32_t)n, &owned, &persist);
    if (ci->group == UINT32_MAX)
        goto fail;
    if (!owned)
        free(out);
    ci->world = persist;
    free(idx);
    return ci;
fail:
    free(idx);
    free(out);
    free(ci);
    return NULL;
}

static rmp_comm_info *comm_info_build(MPI_Comm comm)
{
    int inter = 0, rank = -1;
    MPI_Group g;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return NULL;
    if ((inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g)) != MPI_SUCCESS)
        return NULL;
    PMPI_Comm_rank(comm, &rank);
    rmp_comm_info *ci = info_from_group(g, rank, inter);
    PMPI_Group_free(&g);
    return ci;
}

rmp_comm_info *rmp_comm_lookup_slow(MPI_Comm comm, rmp_tls_slot *slot, uint64_t key)
{
    if (rmp_g.state != RMP_ACTIVE || comm == MPI_COMM_NULL)
        return NULL;
    uint64_t gen = __atomic_load_n(&rmp_g.gen, __ATOMIC_ACQUIRE);
    void *val = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, rmp_p.comm_keyval, &val, &flag) != MPI_SUCCESS)
        return NULL;
    rmp_comm_info *ci = flag ? val : NULL;
    if (ci == NULL) {
        RMP_LOCK();
        /* another thread may have built it meanwhile: setting it twice would free the first */
        if (PMPI_Comm_get_attr(comm, rmp_p.comm_keyval, &val, &flag) == MPI_SUCCESS && flag)
            ci = val;
        else if ((ci = comm_info_build(comm)) != NULL && PMPI_Comm_set_attr(comm, rmp_p.comm_keyval, ci) != MPI_SUCCESS) {
            free(ci);
            ci = NULL;
        }
        RMP_UNLOCK();
        if (ci == NULL)
            return NULL;
    }
    slot->info = ci;
    slot->gen = gen;
    slot->key = key;
    return ci;
}

static rmp_comm_info *win_info(MPI_Win win)
{
    void *val = NULL;
    int flag = 0;
    if (win == MPI_WIN_NULL || PMPI_Win_get_attr(win, rmp_p.win_keyval, &val, &flag) != MPI_SUCCESS)
        return NULL;
    if (flag)
        return val;
    rmp_comm_info *ci = NULL;
    RMP_LOCK();
    if (PMPI_Win_get_attr(win, rmp_p.win_keyval, &val, &flag) == MPI_SUCCESS && flag) {
        ci = val;
    } else {
        MPI_Group g;
        if (PMPI_Win_get_group(win, &g) == MPI_SUCCESS) {
            ci = info_from_group(g, -1, 0);
            PMPI_Group_free(&g);
            if (ci && PMPI_Win_set_attr(win, rmp_p.win_keyval, ci) != MPI_SUCCESS) {
                free(ci);
                ci = NULL;
            }
            rmp_keep_data_on_fatal_win_errors(win);
        }
    }
    RMP_UNLOCK();
    return ci;
}

static void types_init(void);

int rmp_core_init(void)
{
    int P = rmp_g.size;
    rmp_g.sent = calloc((size_t)P, sizeof(rmp_cell));
    rmp_g.got = calloc((size_t)P, sizeof(rmp_cell));
    rmp_p.identity = malloc((size_t)P * 4 + 4);
    rmp_p.rowbuf = malloc(((size_t)P * 2 + 2) * sizeof(rmp_p2p_row)); /* 2 rows per peer at most */
    if (!rmp_g.sent || !rmp_g.got || !rmp_p.identity || !rmp_p.rowbuf)
        return -1;
    for (int i = 0; i < P; i++)
        rmp_p.identity[i] = (uint32_t)i;
    if (PMPI_Comm_group(MPI_COMM_WORLD, &rmp_p.world_group) != MPI_SUCCESS)
        return -1;
    int owned;
    const uint32_t *persist;
    if (group_intern_owned(rmp_p.identity, (uint32_t)P, &owned, &persist) != 0) /* group 0 = the world */
        return -1;
    types_init();
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete_cb, &rmp_p.comm_keyval, NULL) != MPI_SUCCESS ||
        PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete_cb, &rmp_p.win_keyval, NULL) != MPI_SUCCESS)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ datatype sizes */

rmp_type_slot rmp_types[RMP_TYPE_SLOTS];

static void types_init(void)
{
    /* the predefined types a program is likely to send; collisions just fall back to the library */
    const MPI_Datatype named[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR, MPI_SHORT, MPI_UNSIGNED_SHORT,
        MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG,
        MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T,
        MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT,
        MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT,
        MPI_SHORT_INT, MPI_PACKED, MPI_CHARACTER, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX,
        MPI_DOUBLE_COMPLEX, MPI_LOGICAL, MPI_INTEGER4, MPI_INTEGER8, MPI_REAL4, MPI_REAL8,
    };
    for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
        int sz;
        if (named[i] == MPI_DATATYPE_NULL || PMPI_Type_size(named[i], &sz) != MPI_SUCCESS || sz == MPI_UNDEFINED)
            continue;
        uint64_t key = rmp_handle_key(&named[i], sizeof named[i]);
        rmp_type_slot *t = &rmp_types[rmp_type_hash(key)];
        if (t->key == 0) {
            t->size = (uint64_t)sz;
            t->key = key;
        }
    }
}

/* ------------------------------------------------------------------ counters */

uint64_t rmp_type_bytes(uint64_t count, MPI_Datatype type)
{
    MPI_Count sz = 0;
    if (PMPI_Type_size_x(type, &sz) != MPI_SUCCESS || sz == MPI_UNDEFINED || sz < 0)
        return 0;
    return count * (uint64_t)sz;
}

void rmp_unattributed(uint64_t bytes)
{
    __atomic_fetch_add(&rmp_g.unattr_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&rmp_g.unattr_msgs, 1, __ATOMIC_RELAXED);
}

static inline void add_to(int w, uint64_t bytes)
{
    if (w < 0)
        rmp_unattributed(bytes);
    else
        rmp_add(&rmp_g.sent[w], bytes);
}

/* ------------------------------------------------------------------ persistent requests */

typedef struct {
    uint64_t key; /* 0 empty, 1 tombstone */
    int32_t world;
    uint64_t bytes;
} preq;

static preq *ptab;
static size_t ptab_cap, ptab_fill;

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = rmp_handle_key(&r, sizeof r);
    return k < 2 ? k + 0x8000000000000000ull : k; /* keep 0/1 free for empty/tombstone */
}

static size_t req_slot(uint64_t k) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20); }

static preq *ptab_find(uint64_t k)
{
    if (!ptab_cap)
        return NULL;
    for (size_t j = req_slot(k) & (ptab_cap - 1);; j = (j + 1) & (ptab_cap - 1)) {
        if (ptab[j].key == k)
            return &ptab[j];
        if (ptab[j].key == 0)
            return NULL;
    }
}

static void ptab_put(uint64_t k, int32_t world, uint64_t bytes)
{
    preq *e = ptab_find(k);
    if (e) {
        e->world = world;
        e->bytes = bytes;
        return;
    }
    if (2 * (ptab_fill + 1) > ptab_cap) {
        size_t ncap = ptab_cap ? ptab_cap * 2 : 256;
        preq *nt = calloc(ncap, sizeof *nt);
        if (nt == NULL)
            return;
        ptab_fill = 0;
        for (size_t i = 0; i < ptab_cap; i++)
            if (ptab[i].key > 1) {
                size_t j = req_slot(ptab[i].key) & (ncap - 1);
                while (nt[j].key)
                    j = (j + 1) & (ncap - 1);
                nt[j] = ptab[i];
                ptab_fill++;
            }
        free(ptab);
        ptab = nt;
        ptab_cap = ncap;
    }
    size_t j = req_slot(k) & (ptab_cap - 1);
    while (ptab[j].key > 1)
        j = (j + 1) & (ptab_cap - 1);
    if (ptab[j].key == 0)
        ptab_fill++;
    ptab[j] = (preq){k, world, bytes};
}

void rmp_persist_init(MPI_Request req, MPI_Comm comm, int dest, uint64_t count, MPI_Datatype type)
{
    if (rmp_g.state != RMP_ACTIVE || req == MPI_REQUEST_NULL)
        return;
    /* resolved now: the communicator may be freed before the request is started */
    int32_t w = dest == MPI_PROC_NULL ? -1 : rmp_world_of(comm, dest);
    if (w < 0 && dest != MPI_PROC_NULL)
        w = -2;
    uint64_t bytes = count * rmp_type_size(type);
    RMP_LOCK();
    ptab_put(req_key(req), w, bytes);
    RMP_UNLOCK();
}

static void persist_count(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return;
    RMP_LOCK();
    preq *e = ptab_find(req_key(req));
    int32_t w = e ? e->world : -1;
    uint64_t bytes = e ? e->bytes : 0;
    RMP_UNLOCK();
    if (w >= 0)
        rmp_add(&rmp_g.sent[w], bytes);
    else if (w == -2)
        rmp_unattributed(bytes);
}

void rmp_persist_start(MPI_Request req)
{
    if (rmp_g.state == RMP_ACTIVE)
        persist_count(req);
}

void rmp_persist_startall(int n, const void *reqs, int kind)
{
    if (rmp_g.state != RMP_ACTIVE)
        return;
    for (int i = 0; i < n; i++)
        persist_count(kind == RMP_F ? PMPI_Request_f2c(((const MPI_Fint *)reqs)[i]) : ((const MPI_Request *)reqs)[i]);
}

void rmp_persist_forget(MPI_Request req)
{
    if (rmp_g.state != RMP_ACTIVE || req == MPI_REQUEST_NULL)
        return;
    RMP_LOCK();
    preq *e = ptab_find(req_key(req));
    if (e)
        e->key = 1; /* tombstone */
    RMP_UNLOCK();
}

/* ------------------------------------------------------------------ one-sided */

void rmp_rma(MPI_Win win, int target, uint64_t count, MPI_Datatype type, int is_get)
{
    if (rmp_g.state != RMP_ACTIVE || target == MPI_PROC_NULL)
        return;
    uint64_t bytes = count * rmp_type_size(type);
    rmp_comm_info *wi = win_info(win);
    int w = (wi && (unsigned)target < wi->size && wi->world[target] != UINT32_MAX) ? (int)wi->world[target] : -1;
    if (w < 0)
        rmp_unattributed(bytes);
    else
        rmp_add(is_get ? &rmp_g.got[w] : &rmp_g.sent[w], bytes);
}

/* ------------------------------------------------------------------ exact-pair collectives */

static MPI_Datatype type_at(const void *types, int i, int kind)
{
    return kind == RMP_F ? PMPI_Type_f2c(((const MPI_Fint *)types)[i]) : ((const MPI_Datatype *)types)[i];
}

void rmp_gatherv(MPI_Comm comm, int root, const void *sendbuf, uint64_t count, MPI_Datatype type)
{
    if (rmp_g.state != RMP_ACTIVE)
        return;
    rmp_comm_info *ci = rmp_comm_info_of(comm);
    if (ci == NULL)
        return;
    /* the root keeps its own block; intercommunicator: MPI_ROOT / MPI_PROC_NULL do not send */
    if ((!ci->inter && root == ci->local_rank) || root == MPI_ROOT || root == MPI_PROC_NULL || sendbuf == MPI_IN_PLACE)
        return;
    if ((unsigned)root >= ci->size)
        return;
    uint32_t w = ci->world[root];
    add_to(w == UINT32_MAX ? -1 : (int)w, count * rmp_type_size(type));
}

/* out-neighbours of a process topology, as world ranks (-1 = MPI_PROC_NULL) */
static int topo_out(MPI_Comm comm, rmp_comm_info *ci)
{
    if (__atomic_load_n(&ci->topo_done, __ATOMIC_ACQUIRE))
        return ci->n_out;
    RMP_LOCK();
    if (!ci->topo_done) {
        int status = MPI_UNDEFINED, n = 0, *nb = NULL;
        PMPI_Topo_test(comm, &status);
        if (status == MPI_CART) {
            int nd = 0;
            PMPI_Cartdim_get(comm, &nd);
            nb = malloc(sizeof(int) * (size_t)(2 * nd + 1));
            for (int d = 0; nb && d < nd; d++) /* order of the standard: -1 then +1, per dimension */
                PMPI_Cart_shift(comm, d, 1, &nb[2 * d], &nb[2 * d + 1]);
            n = nb ? 2 * nd : 0;
        } else if (status == MPI_GRAPH) {
            PMPI_Graph_neighbors_count(comm, ci->local_rank, &n);
            nb = malloc(sizeof(int) * (size_t)(n + 1));
            if (nb)
                PMPI_Graph_neighbors(comm, ci->local_rank, n, nb);
        } else if (status == MPI_DIST_GRAPH) {
            int indeg = 0, outdeg = 0, weighted = 0;
            PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
            int *src = malloc(sizeof(int) * (size_t)(indeg + 1));
            int *sw = weighted ? malloc(sizeof(int) * (size_t)(indeg + 1)) : MPI_UNWEIGHTED;
            int *dw = weighted ? malloc(sizeof(int) * (size_t)(outdeg + 1)) : MPI_UNWEIGHTED;
            nb = malloc(sizeof(int) * (size_t)(outdeg + 1));
            if (src && nb && sw && dw) {
                PMPI_Dist_graph_neighbors(comm, indeg, src, sw, outdeg, nb, dw);
                n = outdeg;
            }
            free(src);
            if (weighted) {
                free(sw);
                free(dw);
            }
        }
        int32_t *out = malloc(sizeof(int32_t) * (size_t)(n + 1));
        if (nb && out) {
            for (int i = 0; i < n; i++)
                out[i] = (nb[i] == MPI_PROC_NULL || (unsigned)nb[i] >= ci->size || ci->world[nb[i]] == UINT32_MAX)
                             ? -1 : (int32_t)ci->world[nb[i]];
        } else {
            n = 0;
        }
        free(nb);
        ci->out = out;
        ci->n_out = n;
        __atomic_store_n(&ci->topo_done, 1, __ATOMIC_RELEASE);
    }
    RMP_UNLOCK();
    return ci->n_out;
}

void rmp_neighbor_same(MPI_Comm comm, uint64_t count, MPI_Datatype type)
{
    if (rmp_g.state != RMP_ACTIVE)
        return;
    rmp_comm_info *ci = rmp_comm_info_of(comm);
    if (ci == NULL)
        return;
    uint64_t bytes = count * rmp_type_size(type);
    int n = topo_out(comm, ci);
    for (int k = 0; k < n; k++)
        if (ci->out[k] >= 0)
            rmp_add(&rmp_g.sent[ci->out[k]], bytes);
}

#define RMP_DEFINE_COUNTED(SFX, CT)                                                                      \
    void rmp_alltoallv##SFX(MPI_Comm comm, const void *sendbuf, const CT *scounts, MPI_Datatype stype,    \
                            const CT *rcounts, MPI_Datatype rtype)                                        \
    {                                                                                                     \
        if (rmp_g.state != RMP_ACTIVE)                                                                    \
            return;                                                                                       \
        rmp_comm_info *ci = rmp_comm_info_of(comm);                                                       \
        if (ci == NULL)                                                                                   \
            return;                                                                                       \
        int inplace = sendbuf == MPI_IN_PLACE; /* in place: the receive layout is exchanged */           \
        const CT *c = inplace ? rcounts : scounts;                                                        \
        uint64_t sz = rmp_type_size(inplace ? rtype : stype);                                             \
        for (uint32_t j = 0; j < ci->size; j++)                                                           \
            if ((ci->inter || (int)j != ci->local_rank) && c[j] > 0)                                      \
                add_to(ci->world[j] == UINT32_MAX ? -1 : (int)ci->world[j], (uint64_t)c[j] * sz);         \
    }                                                                                                     \
    void rmp_alltoallw##SFX(MPI_Comm comm, const void *sendbuf, const CT *scounts, const void *stypes,    \
                            const CT *rcounts, const void *rtypes, int kind)                              \
    {                                                                                                     \
        if (rmp_g.state != RMP_ACTIVE)                                                                    \
            return;                                                                                       \
        rmp_comm_info *ci = rmp_comm_info_of(comm);                                                       \
        if (ci == NULL)                                                                                   \
            return;                                                                                       \
        int inplace = sendbuf == MPI_IN_PLACE;                                                            \
        const CT *c = inplace ? rcounts : scounts;                                                        \
        const void *t = inplace ? rtypes : stypes;                                                        \
        for (uint32_t j = 0; j < ci->size; j++)                                                           \
            if ((ci->inter || (int)j != ci->local_rank) && c[j] > 0)                                      \
                add_to(ci->world[j] == UINT32_MAX ? -1 : (int)ci->world[j],                               \
                       (uint64_t)c[j] * rmp_type_size(type_at(t, (int)j, kind)));                         \
    }                                                                                                     \
    void rmp_scatterv##SFX(MPI_Comm comm, int root, const CT *scounts, MPI_Datatype stype)                \
    {                                                                                                     \
        if (rmp_g.state != RMP_ACTIVE)                                                                    \
            return;                                                                                       \
        rmp_comm_info *ci = rmp_comm_info_of(comm);                                                       \
        if (ci == NULL || (ci->inter ? root != MPI_ROOT : root != ci->local_rank))                        \
            return;                                                                                       \
        uint64_t sz = rmp_type_size(stype);                                                               \
        for (uint32_t j = 0; j < ci->size; j++)                                                           \
            if ((ci->inter || (int)j != root) && scounts[j] > 0)                                          \
                add_to(ci->world[j] == UINT32_MAX ? -1 : (int)ci->world[j], (uint64_t)scounts[j] * sz);   \
    }                                                                                                     \
    void rmp_neighbor_v##SFX(MPI_Comm comm, const CT *scounts, MPI_Datatype stype)                        \
    {                                                                                                     \
        if (rmp_g.state != RMP_ACTIVE)                                                                    \
            return;                                                                                       \
        rmp_comm_info *ci = rmp_comm_info_of(comm);                                                       \
        if (ci == NULL)                                                                                   \
            return;                                                                                       \
        uint64_t sz = rmp_type_size(stype);                                                               \
        int n = topo_out(comm, ci);                                                                       \
        for (int k = 0; k < n; k++)                                                                       \
            if (ci->out[k] >= 0)                                                                          \
                rmp_add(&rmp_g.sent[ci->out[k]], (uint64_t)scounts[k] * sz);                              \
    }                                                                                                     \
    void rmp_neighbor_w##SFX(MPI_Comm comm, const CT *scounts, const void *stypes, int kind)              \
    {                                                                                                     \
        if (rmp_g.state != RMP_ACTIVE)                                                                    \
            return;                                                                                       \
        rmp_comm_info *ci = rmp_comm_info_of(comm);                                                       \
        if (ci == NULL)                                                                                   \
            return;                                                                                       \
        int n = topo_out(comm, ci);                                                                       \
        for (int k = 0; k < n; k++)                                                                       \
            if (ci->out[k] >= 0)                                                                          \
                rmp_add(&rmp_g.sent[ci->out[k]], (uint64_t)scounts[k] * rmp_type_size(type_at(stypes, k, kind))); \
    }                                                                                                     \
    void rmp_coll_sum##SFX(MPI_Comm comm, int op, const CT *counts, MPI_Datatype type)                    \
    {                                                                                                     \
        if (rmp_g.state != RMP_ACTIVE)                                                                    \
            return;                                                                                       \
        rmp_comm_info *ci = rmp_comm_info_of(comm);                                                       \
        if (ci == NULL || ci->inter || ci->local_rank != 0)                                               \
            return;                                                                                       \
        uint64_t total = 0;                                                                               \
        for (uint32_t j = 0; j < ci->size; j++)                                                           \
            total += (uint64_t)counts[j];                                                                 \
        rmp_coll(comm, op, -1, total * rmp_type_size(type));                                              \
    }
RMP_DEFINE_COUNTED(_i, int)
RMP_DEFINE_COUNTED(_l, MPI_Count)

/* ------------------------------------------------------------------ collective table */

static int32_t *ctab; /* hash index into rmp_p.coll rows, -1 empty */
static size_t ctab_cap;

static uint64_t coll_hash(uint32_t group, int op, int32_t root, int bucket)
{
    uint64_t k = ((uint64_t)group << 32) ^ ((uint64_t)(uint32_t)root << 12) ^ ((uint64_t)op << 7) ^ (uint64_t)bucket;
    return k * 0x9E3779B97F4A7C15ull;
}

static void coll_record(uint32_t group, int op, int32_t root, uint64_t n)
{
    int bucket = n ? 64 - __builtin_clzll(n) : 0;
    size_t nrows = rmp_p.coll.len / sizeof(rmp_coll_row);
    if (2 * (nrows + 1) > ctab_cap) {
        size_t ncap = ctab_cap ? 2 * ctab_cap : 64;
        int32_t *nt = malloc(ncap * sizeof *nt);
        if (nt == NULL)
            return;
        memset(nt, 0xff, ncap * sizeof *nt);
        const rmp_coll_row *rows = (const rmp_coll_row *)rmp_p.coll.data;
        for (size_t r = 0; r < nrows; r++) {
            size_t j = (coll_hash(rows[r].group, rows[r].op, rows[r].root, rows[r].bucket) >> 20) & (ncap - 1);
            while (nt[j] >= 0)
                j = (j + 1) & (ncap - 1);
            nt[j] = (int32_t)r;
        }
        free(ctab);
        ctab = nt;
        ctab_cap = ncap;
    }
    rmp_coll_row *rows = (rmp_coll_row *)rmp_p.coll.data;
    size_t j = (coll_hash(group, op, root, bucket) >> 20) & (ctab_cap - 1);
    for (; ctab[j] >= 0; j = (j + 1) & (ctab_cap - 1)) {
        rmp_coll_row *r = &rows[ctab[j]];
        if (r->group == group && r->op == op && r->root == root && r->bucket == bucket) {
            r->calls++;
            r->bytes += n;
            return;
        }
    }
    rmp_coll_row row = {group, (uint16_t)op, (uint16_t)bucket, root, 0, 1, n};
    if (rmp_buf_append(&rmp_p.coll, &row, sizeof row) == 0)
        ctab[j] = (int32_t)nrows;
}

void rmp_coll(MPI_Comm comm, int op, int root, uint64_t n)
{
    if (rmp_g.state != RMP_ACTIVE)
        return;
    rmp_snapshot_point();
    rmp_comm_info *ci = rmp_comm_info_of(comm);
    if (ci == NULL)
        return;
    if (ci->inter) {
        __atomic_fetch_add(&rmp_g.inter_coll, 1, __ATOMIC_RELAXED);
        return;
    }
    /* one record per communicator: its rank 0 holds the table */
    if (ci->size <= 1 || ci->local_rank != 0)
        return;
    int32_t wroot = -1;
    if (root >= 0 && (unsigned)root < ci->size)
        wroot = ci->world[root] == UINT32_MAX ? -1 : (int32_t)ci->world[root];
    RMP_LOCK();
    coll_record(ci->group, op, wroot, n);
    RMP_UNLOCK();
}

void rmp_coll_typed(MPI_Comm comm, int op, int root, uint64_t count, MPI_Datatype type)
{
    if (rmp_g.state == RMP_ACTIVE)
        rmp_coll(comm, op, root, count * rmp_type_size(type));
}

void rmp_coll_block(MPI_Comm comm, int op, int root, const void *sendbuf, uint64_t scount, MPI_Datatype stype,
                    uint64_t rcount, MPI_Datatype rtype)
{
    if (rmp_g.state != RMP_ACTIVE)
        return;
    /* only the in-place form makes the receive arguments significant on every rank */
    uint64_t n = sendbuf == MPI_IN_PLACE ? rcount * rmp_type_size(rtype) : scount * rmp_type_size(stype);
    rmp_coll(comm, op, root, n);
}

void rmp_coll_scatter(MPI_Comm comm, int root, uint64_t scount, MPI_Datatype stype, const void *recvbuf,
                      uint64_t rcount, MPI_Datatype rtype)
{
    if (rmp_g.state != RMP_ACTIVE)
        return;
    rmp_comm_info *ci = rmp_comm_info_of(comm);
    if (ci == NULL)
        return;
    (void)recvbuf;
    /* send arguments are significant at the root only */
    uint64_t n = (!ci->inter && root == ci->local_rank) ? scount * rmp_type_size(stype) : rcount * rmp_type_size(rtype);
    rmp_coll(comm, RMP_OP_SCATTER, root, n);
}
