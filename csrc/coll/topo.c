/* The physical order of a communicator's ranks, built once per communicator (collectively,
 * on its first call that a kernel takes) and cached on it as an attribute.
 *
 * Where the order comes from, first match wins:
 *   RANKMAP_COLL_ORDER=file  world ranks along the topology, one per line, as `rankmap map`
 *                            writes it (collective-order.txt): nodes neighbour to neighbour on
 *                            the torus, one node's ranks contiguous; `# grid AxBx..` gives the
 *                            d-D ring's grid for the whole world.
 *   RANKMAP_COLL_GRID=AxBx.. rank order, with this grid when its product is the size.
 *   otherwise                the ranks of one node (MPI_COMM_TYPE_SHARED) contiguous, nodes
 *                            in the order of their lowest rank.
 * Without a usable grid, a grid of (ranks per node) x (nodes) is used when every node holds
 * the same number of contiguous ranks; else a 1-D ring. */
#include "coll.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

static void topo_free(rm_topo *t)
{
    if (!t)
        return;
    free(t->order);
    free(t->pos);
    free(t);
}

static int delete_topo(MPI_Comm comm, int kv, void *attr, void *extra)
{
    (void)comm, (void)kv, (void)extra;
    rm_topo *t = attr;
    if (t && t->inner != MPI_COMM_NULL)
        PMPI_Comm_free(&t->inner);
    topo_free(t);
    return MPI_SUCCESS;
}

static void make_keyval(void)
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_topo, &keyval, NULL);
}

/* "4x3x3x4" -> dims; 0 when malformed */
static int parse_grid(const char *s, int *dims)
{
    int nd = 0;
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1 << 24 || nd == RM_MAXDIMS)
            return 0;
        dims[nd++] = (int)v;
        s = end;
        if ((*s == 'x' || *s == 'X') && s[1] >= '0' && s[1] <= '9')
            s++;
        else if (*s && *s != '\n' && *s != ' ')
            return 0;
        else
            break;
    }
    return nd;
}

static long grid_product(int nd, const int *dims)
{
    long p = 1;
    for (int i = 0; i < nd; i++)
        p *= dims[i];
    return p;
}

/* world rank -> position in the order file (-1 when absent); *n = world size it covers */
static int *read_order_file(const char *path, int wsize, int *nd, int *dims, int *bad)
{
    FILE *f = fopen(path, "r");
    *bad = 0;
    *nd = 0;
    if (!f) {
        *bad = errno ? errno : 1;
        return NULL;
    }
    int *key = malloc(sizeof(int) * (size_t)wsize);
    if (!key) {
        fclose(f);
        *bad = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < wsize; i++)
        key[i] = -1;
    char *line = NULL;
    size_t cap = 0;
    int npos = 0;
    while (getline(&line, &cap, f) >= 0) {
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#') {
            if (strncmp(s, "# grid ", 7) == 0)
                *nd = parse_grid(s + 7, dims);
            continue;
        }
        if (*s == '\n' || *s == 0)
            continue;
        char *end;
        long r = strtol(s, &end, 10);
        if (end == s || r < 0) {
            *bad = EINVAL;
            break;
        }
        if (r < wsize && key[r] < 0)
            key[r] = npos;
        npos++;
    }
    free(line);
    fclose(f);
    if (*bad) {
        free(key);
        return NULL;
    }
    return key;
}

static const int *sort_keys;
static int by_key(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (sort_keys[x] != sort_keys[y])
        return sort_keys[x] < sort_keys[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

static void sort_by(int *order, int p, const int *keys)
{
    pthread_mutex_lock(&sort_lock);   /* qsort has no context argument: keep the key table private */
    sort_keys = keys;
    qsort(order, (size_t)p, sizeof(int), by_key);
    pthread_mutex_unlock(&sort_lock);
}

/* grid (ranks per node) x (nodes) when nodes are contiguous along the order and equal */
static int node_grid(const rm_topo *t, const int *leader, int *dims)
{
    int runs = 0, run = 0, first = -1;
    for (int i = 0; i < t->p; i++) {
        if (i == 0 || leader[t->order[i]] != leader[t->order[i - 1]]) {
            if (i > 0) {
                if (first < 0)
                    first = run;
                else if (run != first)
                    return 0;
            }
            runs++;
            run = 0;
        }
        run++;
    }
    if (first >= 0 && run != first)
        return 0;
    /* the same node must not come back later in the order: one run per node */
    int nodes = 0;
    for (int r = 0; r < t->p; r++)
        nodes += leader[r] == r;
    if (runs != nodes)
        return 0;
    if (first < 0)
        first = run;
    if ((long)first * runs != t->p)
        return 0;
    int nd = 0;
    if (first > 1)
        dims[nd++] = first;
    if (runs > 1)
        dims[nd++] = runs;
    if (nd == 0)
        dims[nd++] = 1;
    return nd;
}

static rm_topo *build(MPI_Comm comm, int *err)
{
    int p, me;
    *err = MPI_SUCCESS;
    PMPI_Comm_size(comm, &p);
    PMPI_Comm_rank(comm, &me);
    rm_topo *t = calloc(1, sizeof(*t));
    int *leader = malloc(sizeof(int) * (size_t)p), *keys = malloc(sizeof(int) * (size_t)p);
    int *wranks = malloc(sizeof(int) * (size_t)p), *idx = malloc(sizeof(int) * (size_t)p);
    int *fkey = NULL;
    if (!t || !leader || !keys || !wranks || !idx) {
        *err = MPI_ERR_NO_MEM;
        goto fail;
    }
    t->p = p;
    t->inner = MPI_COMM_NULL;
    t->order = malloc(sizeof(int) * (size_t)p);
    t->pos = malloc(sizeof(int) * (size_t)p);
    if (!t->order || !t->pos) {
        *err = MPI_ERR_NO_MEM;
        goto fail;
    }
    /* nodes: the lowest rank of each shared-memory group names it */
    MPI_Comm node;
    int rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
    int mine = me;
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Allreduce(&me, &mine, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgather(&mine, 1, MPI_INT, leader, 1, MPI_INT, comm);
    if (rc != MPI_SUCCESS) {
        *err = rc;
        goto fail;
    }
    for (int i = 0; i < p; i++)
        idx[i] = i;
    /* world ranks of the members */
    MPI_Group g, wg;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, p, idx, wg, wranks);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    int wsize;
    PMPI_Comm_size(MPI_COMM_WORLD, &wsize);

    const char *file = getenv("RANKMAP_COLL_ORDER");
    const char *genv = getenv("RANKMAP_COLL_GRID");
    int fdims[RM_MAXDIMS], fnd = 0, bad = 0;
    if (file && *file) {
        fkey = read_order_file(file, wsize, &fnd, fdims, &bad);
        for (int i = 0; fkey && i < p; i++)
            if (wranks[i] == MPI_UNDEFINED || fkey[wranks[i]] < 0) {
                bad = -1;
                free(fkey);
                fkey = NULL;
            }
        if (!fkey && me == 0)
            fprintf(stderr, "rankmap-coll: RANKMAP_COLL_ORDER=%s: %s; ordering by nodes instead\n", file,
                    bad > 0 ? strerror(bad) : "does not list every rank");
    }
    if (!fkey && genv && *genv && p == wsize) {
        /* a grid that cannot be read, or not of the world's size, was ignored without a word
         * while the kernels reported "order: grid" (docs/collectives.md: bad values are
         * reported and ignored) */
        int gd0[RM_MAXDIMS], n0 = parse_grid(genv, gd0);
        if (!n0 || grid_product(n0, gd0) != p) {
            static int warned;
            if (me == 0 && !warned)
                fprintf(stderr, "rankmap-coll: ignoring RANKMAP_COLL_GRID=%s: %s %d ranks (dimensions such as "
                        "4x3x2 whose product is the number of ranks); ordering by nodes instead\n", genv,
                        n0 ? "its product is not the world's" : "not a grid of", p);
            warned = 1;
            genv = NULL;
        }
    }
    if (fkey) {
        for (int i = 0; i < p; i++)
            keys[i] = fkey[wranks[i]];
        snprintf(t->source, sizeof t->source, "file");
    } else if (genv && *genv) {
        for (int i = 0; i < p; i++)
            keys[i] = i;
        snprintf(t->source, sizeof t->source, "grid");
    } else {
        for (int i = 0; i < p; i++)
            keys[i] = leader[i];
        snprintf(t->source, sizeof t->source, "nodes");
    }
    for (int i = 0; i < p; i++)
        t->order[i] = i;
    sort_by(t->order, p, keys);
    for (int i = 0; i < p; i++)
        t->pos[t->order[i]] = i;

    int gd[RM_MAXDIMS], gnd = 0;
    if (fkey && fnd > 0 && grid_product(fnd, fdims) == p && p == wsize) {
        gnd = fnd;
        memcpy(gd, fdims, sizeof(int) * (size_t)fnd);
    } else if (!fkey && genv && *genv) {
        gnd = parse_grid(genv, gd);
        if (gnd && grid_product(gnd, gd) != p)
            gnd = 0;
    }
    if (!gnd)
        gnd = node_grid(t, leader, gd);
    if (!gnd) {
        gnd = 1;
        gd[0] = p;
    }
    t->ndims = gnd;
    memcpy(t->dims, gd, sizeof(int) * (size_t)gnd);
    rc = PMPI_Comm_dup(comm, &t->inner);
    if (rc != MPI_SUCCESS) {
        *err = rc;
        goto fail;
    }
    free(leader);
    free(keys);
    free(wranks);
    free(idx);
    free(fkey);
    return t;
fail:
    free(leader);
    free(keys);
    free(wranks);
    free(idx);
    free(fkey);
    topo_free(t);
    return NULL;
}

const rm_topo *rm_topo_get(MPI_Comm comm, int *err)
{
    pthread_once(&keyval_once, make_keyval);
    *err = MPI_SUCCESS;
    if (keyval == MPI_KEYVAL_INVALID) {
        *err = MPI_ERR_INTERN;
        return NULL;
    }
    void *val = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, keyval, &val, &found);
    if (found)
        return val;
    rm_topo *t = build(comm, err);
    if (!t)
        return NULL;
    PMPI_Comm_set_attr(comm, keyval, t);
    return t;
}
