/* The kernels: ring allreduce (1-D and d-D, packetised), recursive doubling, the k-chain
 * reduce, the pipelined chain broadcast and scatter + ring allgather broadcast.
 * All work on positions along the topology order (coll.h) and on the topology's private
 * duplicate of the communicator, so they never match the application's messages. */
#include "coll.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_RS = 7301, TAG_AG, TAG_RD, TAG_CHAIN, TAG_BCAST };

#define CHECK(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) { err = rc_; goto out; } } while (0)

static inline char *at(const void *b, size_t i, MPI_Aint ext) { return (char *)b + i * (size_t)ext; }
static inline int rank_of(const rm_ctx *c, int pos) { return c->t->order[((pos % c->t->p) + c->t->p) % c->t->p]; }

static void block_range(size_t len, int d, int b, size_t *off, size_t *n)
{
    size_t q = len / (size_t)d, r = len % (size_t)d;
    *n = q + ((size_t)b < r);
    *off = (size_t)b * q + ((size_t)b < r ? (size_t)b : r);
}

/* Send ns elements from sp to `right` while receiving nr elements from `left` into rp (added
 * to rp when `reduce`), both cut into packets. Two packets in flight each way: receives are
 * posted first and re-posted as soon as a buffer is free, and the addition of one packet
 * overlaps the arrival of the next. Capping the sends matters: posting every packet at once
 * makes them share the link and all arrive at the end, leaving nothing to overlap. */
static int exchange(rm_ctx *c, int right, const void *sp, size_t ns, int left, void *rp, size_t nr,
                    int reduce, char *tmp, int tag)
{
    const size_t pk = c->packet;
    const size_t nps = (ns + pk - 1) / pk, npr = (nr + pk - 1) / pk;
    MPI_Request rr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, sr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int err = MPI_SUCCESS;
    MPI_Comm comm = c->t->inner;
#define RCOUNT(i) ((int)((i) + 1 < npr ? pk : nr - (i) * pk))
#define SCOUNT(i) ((int)((i) + 1 < nps ? pk : ns - (i) * pk))
#define RBUF(i) (reduce ? tmp + ((i) % 2) * pk * (size_t)c->ext : at(rp, (i) * pk, c->ext))
    for (size_t i = 0; i < 2 && i < npr; i++)
        CHECK(MPI_Irecv(RBUF(i), RCOUNT(i), c->dt, left, tag, comm, &rr[i % 2]));
    for (size_t i = 0; i < 2 && i < nps; i++)
        CHECK(MPI_Isend(at(sp, i * pk, c->ext), SCOUNT(i), c->dt, right, tag, comm, &sr[i % 2]));
    for (size_t i = 0; i < (npr > nps ? npr : nps); i++) {
        if (i < npr) {
            CHECK(MPI_Wait(&rr[i % 2], MPI_STATUS_IGNORE));
            if (reduce)
                CHECK(PMPI_Reduce_local(RBUF(i), at(rp, i * pk, c->ext), RCOUNT(i), c->dt, c->op));
            if (i + 2 < npr)
                CHECK(MPI_Irecv(RBUF(i + 2), RCOUNT(i + 2), c->dt, left, tag, comm, &rr[i % 2]));
        }
        if (i < nps) {
            CHECK(MPI_Wait(&sr[i % 2], MPI_STATUS_IGNORE));
            if (i + 2 < nps)
                CHECK(MPI_Isend(at(sp, (i + 2) * pk, c->ext), SCOUNT(i + 2), c->dt, right, tag, comm, &sr[i % 2]));
        }
    }
#undef RCOUNT
#undef SCOUNT
#undef RBUF
out:
    return err;
}

/* The rings of a d-D grid as seen from one position: neighbours and (possibly reversed)
 * coordinate along each dimension. Along the node dimensions, odd ranks of a node run their
 * rings the other way round: the ranks of one node then load both directions of each link. */
typedef struct {
    int nd, dims[RM_MAXDIMS], xs[RM_MAXDIMS], right[RM_MAXDIMS], left[RM_MAXDIMS];
} ringplan;

static void plan_for(const rm_ctx *c, int pos, int nd, const int *dims, ringplan *rp)
{
    int s = 1, coord[RM_MAXDIMS], stride[RM_MAXDIMS];
    rp->nd = nd;
    for (int j = 0; j < nd; j++) {
        rp->dims[j] = dims[j];
        stride[j] = s;
        coord[j] = (pos / s) % dims[j];
        s *= dims[j];
    }
    for (int j = 0; j < nd; j++) {
        int d = dims[j], x = coord[j], rev = j > 0 && dims[0] > 1 && coord[0] % 2 == 1;
        int up = pos + ((x + 1) % d - x) * stride[j], down = pos + ((x + d - 1) % d - x) * stride[j];
        rp->right[j] = rank_of(c, rev ? down : up);
        rp->left[j] = rank_of(c, rev ? up : down);
        rp->xs[j] = rev ? (d - x) % d : x;
    }
}

/* the part [*o, *o + *n) a position owns after the reduce-scatter; off/len: the part each
 * dimension's ring worked on */
static void owned(const ringplan *rp, size_t count, size_t *o, size_t *n, size_t *off, size_t *len)
{
    *o = 0;
    *n = count;
    for (int j = 0; j < rp->nd; j++) {
        off[j] = *o;
        len[j] = *n;
        if (rp->dims[j] == 1)
            continue;
        size_t bo, bn;
        block_range(*n, rp->dims[j], (rp->xs[j] + 1) % rp->dims[j], &bo, &bn);
        *o += bo;
        *n = bn;
    }
}

static int ring_reduce_scatter(rm_ctx *c, const ringplan *rp, void *buf, const size_t *off, const size_t *len,
                               char *tmp)
{
    int err = MPI_SUCCESS;
    for (int j = 0; j < rp->nd; j++) {
        int d = rp->dims[j], x = rp->xs[j];
        for (int st = 0; st < d - 1; st++) {
            size_t so, sn, ro, rn;
            block_range(len[j], d, ((x - st) % d + d) % d, &so, &sn);
            block_range(len[j], d, ((x - st - 1) % d + d) % d, &ro, &rn);
            CHECK(exchange(c, rp->right[j], at(buf, off[j] + so, c->ext), sn, rp->left[j], at(buf, off[j] + ro, c->ext),
                           rn, 1, tmp, TAG_RS));
        }
    }
out:
    return err;
}

/* Ring allreduce over a grid dims[0] x ... x dims[nd-1] of positions (dims[0] fastest):
 * reduce-scatter along each dimension in turn on the shrinking part, then all-gather back
 * in reverse order. nd = 1, dims = {p} is the classic 1-D ring: 2(p-1) steps; the d-D ring
 * needs 2 sum(d_i - 1) steps for the same bytes. */
int rm_allreduce_ring(rm_ctx *c, void *buf, size_t count, int nd, const int *dims)
{
    size_t off[RM_MAXDIMS], len[RM_MAXDIMS], o, n;
    int err = MPI_SUCCESS;
    char *tmp = malloc(2 * c->packet * (size_t)c->ext);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    ringplan rp;
    plan_for(c, c->me, nd, dims, &rp);
    owned(&rp, count, &o, &n, off, len);
    CHECK(ring_reduce_scatter(c, &rp, buf, off, len, tmp));
    for (int j = nd - 1; j >= 0; j--) {
        int d = dims[j], x = rp.xs[j];
        for (int st = 0; st < d - 1; st++) {
            size_t so, sn, ro, rn;
            block_range(len[j], d, ((x + 1 - st) % d + d) % d, &so, &sn);
            block_range(len[j], d, ((x - st) % d + d) % d, &ro, &rn);
            CHECK(exchange(c, rp.right[j], at(buf, off[j] + so, c->ext), sn, rp.left[j], at(buf, off[j] + ro, c->ext),
                           rn, 0, tmp, TAG_AG));
        }
    }
out:
    free(tmp);
    return err;
}

/* Rooted reduce as the d-D ring's reduce-scatter followed by the reverse walk: along the
 * last dimension, then the one before..., the parts flow to the ring member that sits at
 * the root's coordinate, until the root holds everything. About 2n bytes through the root's
 * links, and sum(d_i - 1) messages into it instead of p - 1. */
int rm_reduce_rsg(rm_ctx *c, const void *sendbuf, void *recvbuf, size_t count, int root, int nd, const int *dims)
{
    const int p = c->t->p, rootpos = c->t->pos[root];
    const int isroot = c->me == rootpos;
    size_t off[RM_MAXDIMS + 1], len[RM_MAXDIMS + 1], o, n;
    int mine[RM_MAXDIMS], theirs[RM_MAXDIMS], stride[RM_MAXDIMS];
    int err = MPI_SUCCESS;
    char *tmp = malloc(2 * c->packet * (size_t)c->ext), *work = NULL;
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)p);
    if (!tmp || !rq) {
        err = MPI_ERR_NO_MEM;
        goto out;
    }
    if (isroot) {
        work = recvbuf;   /* holds the root's own contribution already */
    } else {
        work = malloc(count * (size_t)c->ext + 1);
        if (!work) {
            err = MPI_ERR_NO_MEM;
            goto out;
        }
        memcpy(work, sendbuf, count * (size_t)c->ext);
    }
    for (int j = 0, st = 1; j < nd; j++) {
        stride[j] = st;
        mine[j] = (c->me / st) % dims[j];
        theirs[j] = (rootpos / st) % dims[j];
        st *= dims[j];
    }
    ringplan rp;
    plan_for(c, c->me, nd, dims, &rp);
    owned(&rp, count, &o, &n, off, len);
    off[nd] = o;
    len[nd] = n;
    CHECK(ring_reduce_scatter(c, &rp, work, off, len, tmp));
    for (int j = nd - 1; j >= 0; j--) {
        /* at this step: the ranks at the root's coordinates in every later dimension */
        int in = 1;
        for (int i = j + 1; i < nd; i++)
            in &= mine[i] == theirs[i];
        if (!in || dims[j] == 1)
            continue;
        if (mine[j] != theirs[j]) {   /* hand my part of this ring's range to the holder, and be done */
            int holder = c->me + (theirs[j] - mine[j]) * stride[j];
            CHECK(MPI_Send(at(work, off[j + 1], c->ext), (int)len[j + 1], c->dt, rank_of(c, holder), TAG_CHAIN,
                           c->t->inner));
            break;
        }
        int nr = 0;
        for (int x = 0; x < dims[j]; x++) {
            if (x == mine[j])
                continue;
            int q = c->me + (x - mine[j]) * stride[j];
            ringplan qp;
            size_t qo, qn, qoff[RM_MAXDIMS + 1], qlen[RM_MAXDIMS + 1];
            plan_for(c, q, nd, dims, &qp);
            owned(&qp, count, &qo, &qn, qoff, qlen);
            qoff[nd] = qo;
            qlen[nd] = qn;
            CHECK(MPI_Irecv(at(work, qoff[j + 1], c->ext), (int)qlen[j + 1], c->dt, rank_of(c, q), TAG_CHAIN,
                            c->t->inner, &rq[nr++]));
        }
        CHECK(MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE));
    }
out:
    if (!isroot)
        free(work);
    free(tmp);
    free(rq);
    return err;
}

/* Binomial tree on virtual positions (the root is 0): at step k a position with bit k set
 * sends its partial sum to the one 2^k below it; log2(p) steps, neighbours first. */
int rm_reduce_binomial(rm_ctx *c, const void *sendbuf, void *recvbuf, size_t count, int root)
{
    const int p = c->t->p, rootpos = c->t->pos[root];
    const int v = ((c->me - rootpos) % p + p) % p;
    MPI_Comm comm = c->t->inner;
    int err = MPI_SUCCESS;
    char *tmp = NULL, *acc = NULL;
    const void *src = sendbuf;
    for (int mask = 1; mask < p; mask <<= 1) {
        if (v & mask) {
            CHECK(MPI_Send(src, (int)count, c->dt, rank_of(c, c->me - mask), TAG_CHAIN, comm));
            break;
        }
        if (v + mask < p) {
            if (!tmp) {
                tmp = malloc(count * (size_t)c->ext + 1);
                if (!tmp) {
                    err = MPI_ERR_NO_MEM;
                    goto out;
                }
                if (v == 0) {
                    acc = recvbuf;   /* the caller put the root's contribution there */
                } else {
                    acc = malloc(count * (size_t)c->ext + 1);
                    if (!acc) {
                        err = MPI_ERR_NO_MEM;
                        goto out;
                    }
                    memcpy(acc, sendbuf, count * (size_t)c->ext);
                }
                src = acc;
            }
            CHECK(MPI_Recv(tmp, (int)count, c->dt, rank_of(c, c->me + mask), TAG_CHAIN, comm, MPI_STATUS_IGNORE));
            CHECK(PMPI_Reduce_local(tmp, acc, (int)count, c->dt, c->op));
        }
    }
out:
    free(tmp);
    if (acc != recvbuf)
        free(acc);
    return err;
}

/* Recursive doubling on positions (partners are close on the topology first); a
 * non-power-of-two size folds the first 2r positions in pairs before and after. Both
 * partners add the same two operands, so every rank ends with identical bits. */
int rm_allreduce_recdbl(rm_ctx *c, void *buf, size_t count)
{
    const int p = c->t->p, me = c->me;
    int p2 = 1, err = MPI_SUCCESS;
    while (p2 * 2 <= p)
        p2 *= 2;
    const int rem = p - p2;
    char *tmp = malloc(count * (size_t)c->ext + 1);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    MPI_Comm comm = c->t->inner;
    int newpos;
    if (me < 2 * rem) {
        if (me % 2 == 0) {
            CHECK(MPI_Send(buf, (int)count, c->dt, rank_of(c, me + 1), TAG_RD, comm));
            newpos = -1;
        } else {
            CHECK(MPI_Recv(tmp, (int)count, c->dt, rank_of(c, me - 1), TAG_RD, comm, MPI_STATUS_IGNORE));
            CHECK(PMPI_Reduce_local(tmp, buf, (int)count, c->dt, c->op));
            newpos = me / 2;
        }
    } else {
        newpos = me - rem;
    }
    if (newpos >= 0) {
        for (int mask = 1; mask < p2; mask <<= 1) {
            int pn = newpos ^ mask;
            int partner = pn < rem ? pn * 2 + 1 : pn + rem;
            CHECK(MPI_Sendrecv(buf, (int)count, c->dt, rank_of(c, partner), TAG_RD, tmp, (int)count, c->dt,
                               rank_of(c, partner), TAG_RD, comm, MPI_STATUS_IGNORE));
            CHECK(PMPI_Reduce_local(tmp, buf, (int)count, c->dt, c->op));
        }
    }
    if (me < 2 * rem) {
        if (me % 2 == 1)
            CHECK(MPI_Send(buf, (int)count, c->dt, rank_of(c, me - 1), TAG_RD, comm));
        else
            CHECK(MPI_Recv(buf, (int)count, c->dt, rank_of(c, me + 1), TAG_RD, comm, MPI_STATUS_IGNORE));
    }
out:
    free(tmp);
    return err;
}

/* k chains of near-equal length, the shorter ones first (the root receives them first). */
int rm_chains_fixed(int m, int k, int *lengths)
{
    if (m <= 0)
        return 0;
    if (k < 1)
        k = 1;
    if (k > m)
        k = m;
    int q = m / k, r = m % k;
    for (int j = 0; j < k; j++)
        lengths[j] = q + (j >= k - r);
    return k;
}

/* The adaptive layout: chains of 1, 2, ..., k members, then the leftover chain (received
 * last): the root finishes chain j just as chain j+1 delivers. */
int rm_chains_adaptive(int m, int *lengths)
{
    int k = 0, used = 0;
    while (used + (k + 1) <= m) {
        k++;
        used += k;
        lengths[k - 1] = k;
    }
    if (m - used > 0)
        lengths[k++] = m - used;
    return k;
}

/* Rooted reduce over chains. Virtual positions v = position - root's position (mod p): the
 * root is v = 0, chain j holds the next lengths[j] positions (neighbours on the topology).
 * Each member adds its successor's partial sums to its own and passes them on, segment by
 * segment; the root adds the chain heads' sums in the order of `lengths`. */
int rm_reduce_chains(rm_ctx *c, const void *sendbuf, void *recvbuf, size_t count, int root, int nchains,
                     const int *lengths)
{
    const int p = c->t->p;
    const int rootpos = c->t->pos[root];
    const int v = ((c->me - rootpos) % p + p) % p;
    const size_t seg = c->packet, nseg = (count + seg - 1) / seg;
    MPI_Comm comm = c->t->inner;
    int err = MPI_SUCCESS;
    char *tmp = NULL, *acc = NULL;
    MPI_Request *rq = NULL;
#define SEGN(i) ((int)((i) + 1 < nseg ? seg : count - (i) * seg))
    if (v == 0) {
        /* the root: recvbuf already holds its own contribution (the caller copied it) */
        (void)sendbuf;
        tmp = malloc((size_t)nchains * seg * (size_t)c->ext + 1);
        rq = malloc(sizeof(MPI_Request) * (size_t)nchains + 1);
        if (!tmp || !rq) {
            err = MPI_ERR_NO_MEM;
            goto out;
        }
        for (size_t i = 0; i < nseg; i++) {
            int start = 1;
            for (int j = 0; j < nchains; j++) {
                CHECK(MPI_Irecv(tmp + (size_t)j * seg * (size_t)c->ext, SEGN(i), c->dt, rank_of(c, rootpos + start),
                                TAG_CHAIN, comm, &rq[j]));
                start += lengths[j];
            }
            for (int j = 0; j < nchains; j++) {
                CHECK(MPI_Wait(&rq[j], MPI_STATUS_IGNORE));
                CHECK(PMPI_Reduce_local(tmp + (size_t)j * seg * (size_t)c->ext, at(recvbuf, i * seg, c->ext), SEGN(i),
                                        c->dt, c->op));
            }
        }
        goto out;
    }
    /* which chain am I in, and where */
    int start = 1, j = 0;
    while (j < nchains && v >= start + lengths[j]) {
        start += lengths[j];
        j++;
    }
    const int idx = v - start, len = lengths[j];
    const int pred = idx == 0 ? rank_of(c, rootpos) : rank_of(c, c->me - 1);
    const int has_succ = idx < len - 1;
    const int succ = has_succ ? rank_of(c, c->me + 1) : MPI_PROC_NULL;
    const char *src = sendbuf;
    MPI_Request rr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, sr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (has_succ) {
        acc = malloc(count * (size_t)c->ext + 1);
        tmp = malloc(2 * seg * (size_t)c->ext + 1);
        if (!acc || !tmp) {
            err = MPI_ERR_NO_MEM;
            goto out;
        }
        memcpy(acc, sendbuf, count * (size_t)c->ext);
        src = acc;
        for (size_t i = 0; i < 2 && i < nseg; i++)
            CHECK(MPI_Irecv(tmp + (i % 2) * seg * (size_t)c->ext, SEGN(i), c->dt, succ, TAG_CHAIN, comm, &rr[i % 2]));
    }
    for (size_t i = 0; i < nseg; i++) {
        if (has_succ) {
            char *t = tmp + (i % 2) * seg * (size_t)c->ext;
            CHECK(MPI_Wait(&rr[i % 2], MPI_STATUS_IGNORE));
            CHECK(PMPI_Reduce_local(t, at(acc, i * seg, c->ext), SEGN(i), c->dt, c->op));
            if (i + 2 < nseg)
                CHECK(MPI_Irecv(t, SEGN(i + 2), c->dt, succ, TAG_CHAIN, comm, &rr[i % 2]));
        }
        CHECK(MPI_Wait(&sr[i % 2], MPI_STATUS_IGNORE));
        CHECK(MPI_Isend(at(src, i * seg, c->ext), SEGN(i), c->dt, pred, TAG_CHAIN, comm, &sr[i % 2]));
    }
    CHECK(MPI_Waitall(2, sr, MPI_STATUSES_IGNORE));
#undef SEGN
out:
    free(tmp);
    free(acc);
    free(rq);
    return err;
}

/* Pipelined chain broadcast along the topology order starting at the root: segment i
 * moves one hop per step, so n bytes over p ranks take about (p - 2 + nseg) segment times. */
int rm_bcast_chain(rm_ctx *c, void *buf, size_t count, int root, size_t seg)
{
    const int p = c->t->p, rootpos = c->t->pos[root];
    const int v = ((c->me - rootpos) % p + p) % p;
    const size_t nseg = (count + seg - 1) / seg;
    const int prev = v > 0 ? rank_of(c, c->me - 1) : MPI_PROC_NULL;
    const int next = v < p - 1 ? rank_of(c, c->me + 1) : MPI_PROC_NULL;
    MPI_Comm comm = c->t->inner;
    MPI_Request rr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, sr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int err = MPI_SUCCESS;
#define SEGN(i) ((int)((i) + 1 < nseg ? seg : count - (i) * seg))
    if (v > 0)
        for (size_t i = 0; i < 2 && i < nseg; i++)
            CHECK(MPI_Irecv(at(buf, i * seg, c->ext), SEGN(i), c->dt, prev, TAG_BCAST, comm, &rr[i]));
    for (size_t i = 0; i < nseg; i++) {
        if (v > 0) {
            CHECK(MPI_Wait(&rr[i % 2], MPI_STATUS_IGNORE));
            if (i + 2 < nseg)
                CHECK(MPI_Irecv(at(buf, (i + 2) * seg, c->ext), SEGN(i + 2), c->dt, prev, TAG_BCAST, comm,
                                &rr[i % 2]));
        }
        if (next != MPI_PROC_NULL) {
            CHECK(MPI_Wait(&sr[i % 2], MPI_STATUS_IGNORE));
            CHECK(MPI_Isend(at(buf, i * seg, c->ext), SEGN(i), c->dt, next, TAG_BCAST, comm, &sr[i % 2]));
        }
    }
    CHECK(MPI_Waitall(2, sr, MPI_STATUSES_IGNORE));
#undef SEGN
out:
    return err;
}

/* Broadcast as a scatter (the library's Scatterv, blocks in topology order) followed by a
 * ring all-gather along the topology: about 2n bytes per rank whatever p is. */
int rm_bcast_scatter_allgather(rm_ctx *c, void *buf, size_t count, int root)
{
    const int p = c->t->p, rootpos = c->t->pos[root];
    const int v = ((c->me - rootpos) % p + p) % p;
    int err = MPI_SUCCESS;
    int *counts = malloc(sizeof(int) * (size_t)p), *displs = malloc(sizeof(int) * (size_t)p);
    char *tmp = NULL;
    if (!counts || !displs) {
        err = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int u = 0; u < p; u++) {   /* block u belongs to virtual position u */
        size_t o, n;
        block_range(count, p, u, &o, &n);
        int r = rank_of(c, rootpos + u);
        counts[r] = (int)n;
        displs[r] = (int)o;
    }
    {
        size_t o, n;
        block_range(count, p, v, &o, &n);
        CHECK(MPI_Scatterv(buf, counts, displs, c->dt, v == 0 ? MPI_IN_PLACE : at(buf, o, c->ext), (int)n, c->dt,
                           root, c->t->inner));
    }
    {
        const int right = rank_of(c, c->me + 1), left = rank_of(c, c->me - 1);
        for (int st = 0; st < p - 1; st++) {
            size_t so, sn, ro, rn;
            block_range(count, p, ((v - st) % p + p) % p, &so, &sn);
            block_range(count, p, ((v - st - 1) % p + p) % p, &ro, &rn);
            CHECK(exchange(c, right, at(buf, so, c->ext), sn, left, at(buf, ro, c->ext), rn, 0, tmp, TAG_AG));
        }
    }
out:
    free(counts);
    free(displs);
    return err;
}
