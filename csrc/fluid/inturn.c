/* The in-turn replay of an SMPI trace (mapper/critpath.py: run_time and critical_latency over
 * _Ranks), the same event loop in C. In Python it was the mapping's cost at 128 ranks: NPB CG
 * B 128's 18.9 million actions took 30-40 s an estimate, and a rankmap-c mapping asks for
 * dozens. Every step is the Python one's, in the same order: ranks run from a heap of
 * (clock, rank) (run_time) or a first-in first-out queue (critical_latency), messages are
 * matched first-in first-out per (source, destination, tag), and every sum and maximum is taken
 * in the order the Python code takes it, so the times are the same to the last bit
 * (tests/test_critpath_native.py). Built with -ffp-contract=off: a fused multiply-add would
 * change the last bits. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { A_COMPUTE, A_SEND, A_ISEND, A_RECV, A_IRECV, A_WAIT, A_WAITALL, A_WAITLAST, A_COLL };
enum { C_BCAST, C_REDUCE, C_ALLREDUCE, C_SCATTER, C_DIRECT };
enum { W_NONE, W_REQS, W_COLL };

#define DETACHED 65536      /* SimGrid's smpi/send-is-detached-thresh (critpath.DETACHED) */
#define DIRECT_MAX 512      /* critpath.DIRECT_MAX */

typedef struct { int64_t *v; int64_t n, cap; } vec;

static int vec_push(vec *a, int64_t x)
{
    if (a->n == a->cap) {
        int64_t cap = a->cap ? 2 * a->cap : 8;
        int64_t *v = realloc(a->v, sizeof(int64_t) * (size_t)cap);
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* a request: [src, dst, tag, end]; end NaN while the message is not matched */
typedef struct { double end; int32_t src, dst, tag; int8_t matched, owned; int64_t next_free; } req_t;
/* a half posted before its other half: (post time, size, request), in a key's queue */
typedef struct { double post; int64_t size, req, next; } ent_t;
/* a (src, dst, tag) key's two queues: halves posted by senders and by receivers */
typedef struct { uint64_t key; int64_t head[2], tail[2]; int8_t used; } slot_t;
typedef struct { double *t, *out; int64_t count, left; int8_t kind; int32_t root; int64_t size; double flops; } coll_t;

typedef struct {
    int64_t P;
    /* the schedule */
    const int64_t *roff; const int8_t *op; const int32_t *ia, *ib; const int64_t *v;
    const int8_t *ckind; const int32_t *croot; const int64_t *csize; const double *cflops;
    /* the pairs */
    int64_t U; const int32_t *rank_node, *E; const double *lat, *spb; const int64_t *pfirst; const int32_t *prid; const double *pc;
    int64_t nres; double inv; int contention, fifo;
    /* the ranks */
    double *t; int64_t *pc_; int8_t *fin, *queued, *wkind; int64_t *wcoll, *ncoll; vec *wreqs, *pending;
    int64_t left;
    /* the queue of ranks to run: a heap of (time, rank) or a ring of ranks */
    double *ht; int64_t *hr, hn, caph, qhead;
    /* requests, halves waiting for their match, keys */
    req_t *req; int64_t nreq, capreq, freereq;
    ent_t *ent; int64_t nent, capent, freeent;
    slot_t *tab; int64_t captab, ntab;
    coll_t *coll; int64_t ncolls, capcoll;
    double *busy;                       /* each resource's queue empties at (contention) */
    double *bsize, *bval; int64_t nb, capb;   /* direct exchanges' bounds per size */
    double *load;
    int oom;
} S;

/* ---- the queue of ranks ---- */
static int before(double ta, int64_t ra, double tb, int64_t rb)
{
    return ta < tb || (ta == tb && ra < rb);
}

/* a rank is in the queue of critical_latency at most once (wake only queues a rank not
 * queued); run_time's heap may hold a rank twice, as Python's does: a rank that wakes itself
 * (the last to enter a collective, a message to itself) and then yields is pushed again */
static void push(S *s, double when, int64_t r)
{
    if (s->fifo) {
        s->hr[(s->qhead + s->hn++) % s->P] = r;
        return;
    }
    if (s->hn == s->caph) {
        int64_t cap = 2 * s->caph;
        double *t = realloc(s->ht, sizeof(double) * (size_t)cap);
        if (!t) {
            s->oom = 1;
            return;
        }
        s->ht = t;
        int64_t *h = realloc(s->hr, sizeof(int64_t) * (size_t)cap);
        if (!h) {
            s->oom = 1;
            return;
        }
        s->hr = h;
        s->caph = cap;
    }
    int64_t i = s->hn++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!before(when, r, s->ht[p], s->hr[p]))
            break;
        s->ht[i] = s->ht[p];
        s->hr[i] = s->hr[p];
        i = p;
    }
    s->ht[i] = when;
    s->hr[i] = r;
}

static int64_t pop(S *s)
{
    if (s->fifo) {
        int64_t r = s->hr[s->qhead];
        s->qhead = (s->qhead + 1) % s->P;
        s->hn--;
        return r;
    }
    int64_t top = s->hr[0];
    double lt = s->ht[--s->hn];
    int64_t lr = s->hr[s->hn];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= s->hn)
            break;
        if (c + 1 < s->hn && before(s->ht[c + 1], s->hr[c + 1], s->ht[c], s->hr[c]))
            c++;
        if (!before(s->ht[c], s->hr[c], lt, lr))
            break;
        s->ht[i] = s->ht[c];
        s->hr[i] = s->hr[c];
        i = c;
    }
    s->ht[i] = lt;
    s->hr[i] = lr;
    return top;
}

static double earliest(S *s)
{
    return (s->fifo || s->hn == 0) ? INFINITY : s->ht[0];
}

static void wake(S *s, int64_t x)
{
    if (!s->queued[x] && !s->fin[x]) {
        s->queued[x] = 1;
        push(s, s->t[x], x);
    }
}

static void requeue(S *s, int64_t r, double when)
{
    s->queued[r] = 1;
    push(s, when, r);
}

/* ---- pairs ---- */
static int64_t pair_of(const S *s, int64_t i, int64_t j)
{
    return i == j ? 0 : s->E[(int64_t)s->rank_node[i] * s->U + s->rank_node[j]];
}

static double cost(const S *s, int64_t i, int64_t j, int64_t size)
{
    int64_t k = pair_of(s, i, j);
    return s->lat[k] + (double)size * s->spb[k];
}

static double transfer(S *s, int64_t i, int64_t j, int64_t size, double start)
{
    int64_t k = pair_of(s, i, j);
    double end = start + (double)size * s->spb[k];
    if (s->contention && size)
        for (int64_t e = s->pfirst[k]; e < s->pfirst[k + 1]; e++) {
            double f = s->busy[s->prid[e]];
            double x = (f > start ? f : start) + (double)size * s->pc[e];
            s->busy[s->prid[e]] = x;
            if (x > end)
                end = x;
        }
    return end + s->lat[k];
}

/* ---- requests and matching ---- */
static int64_t new_req(S *s, int32_t src, int32_t dst, int32_t tag)
{
    int64_t q;
    if (s->freereq >= 0) {
        q = s->freereq;
        s->freereq = s->req[q].next_free;
    } else {
        if (s->nreq == s->capreq) {
            int64_t cap = s->capreq ? 2 * s->capreq : 1024;
            req_t *a = realloc(s->req, sizeof(req_t) * (size_t)cap);
            if (!a) {
                s->oom = 1;
                return -1;
            }
            s->req = a;
            s->capreq = cap;
        }
        q = s->nreq++;
    }
    req_t *x = &s->req[q];
    x->end = NAN;
    x->src = src;
    x->dst = dst;
    x->tag = tag;
    x->matched = 0;
    x->owned = 1;
    return q;
}

/* a request is reused once its message is matched and its rank no longer holds it */
static void release(S *s, int64_t q)
{
    s->req[q].owned = 0;
    if (s->req[q].matched) {
        s->req[q].next_free = s->freereq;
        s->freereq = q;
    }
}

static void matched(S *s, int64_t q)
{
    s->req[q].matched = 1;
    if (!s->req[q].owned) {
        s->req[q].next_free = s->freereq;
        s->freereq = q;
    }
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static slot_t *slot(S *s, uint64_t key)
{
    if (2 * (s->ntab + 1) > s->captab) {
        int64_t cap = s->captab ? 2 * s->captab : 1024;
        slot_t *t = calloc((size_t)cap, sizeof(slot_t));
        if (!t) {
            s->oom = 1;
            return NULL;
        }
        for (int64_t i = 0; i < s->captab; i++)
            if (s->tab[i].used) {
                uint64_t h = mix(s->tab[i].key) & (uint64_t)(cap - 1);
                while (t[h].used)
                    h = (h + 1) & (uint64_t)(cap - 1);
                t[h] = s->tab[i];
            }
        free(s->tab);
        s->tab = t;
        s->captab = cap;
    }
    uint64_t h = mix(key) & (uint64_t)(s->captab - 1);
    while (s->tab[h].used && s->tab[h].key != key)
        h = (h + 1) & (uint64_t)(s->captab - 1);
    slot_t *x = &s->tab[h];
    if (!x->used) {
        x->used = 1;
        x->key = key;
        x->head[0] = x->head[1] = x->tail[0] = x->tail[1] = -1;
        s->ntab++;
    }
    return x;
}

/* rank r's half of src -> dst (critpath._Ranks._post): matched with the other half if that
 * was posted first (the message then moves, with the sender's size), else queued */
static int64_t post(S *s, int64_t r, int sending, int64_t src, int64_t dst, int32_t tag, int64_t size)
{
    int64_t q = new_req(s, (int32_t)src, (int32_t)dst, tag);
    if (q < 0)
        return -1;
    uint64_t key = ((uint64_t)(src * s->P + dst) << 32) | (uint32_t)tag;
    slot_t *k = slot(s, key);
    if (!k)
        return -1;
    int mine = sending ? 0 : 1, theirs = 1 - mine;
    int64_t e = k->head[theirs];
    if (e >= 0) {
        ent_t *x = &s->ent[e];
        k->head[theirs] = x->next;
        if (x->next < 0)
            k->tail[theirs] = -1;
        double t0 = s->t[r] > x->post ? s->t[r] : x->post;
        int64_t other = x->req, sz = sending ? size : x->size;
        x->next = s->freeent;
        s->freeent = e;
        double end = transfer(s, src, dst, sz, t0);
        s->req[q].end = s->req[other].end = end;
        matched(s, q);
        matched(s, other);
        wake(s, sending ? dst : src);
        return q;
    }
    if (s->freeent >= 0) {
        e = s->freeent;
        s->freeent = s->ent[e].next;
    } else {
        if (s->nent == s->capent) {
            int64_t cap = s->capent ? 2 * s->capent : 1024;
            ent_t *a = realloc(s->ent, sizeof(ent_t) * (size_t)cap);
            if (!a) {
                s->oom = 1;
                return -1;
            }
            s->ent = a;
            s->capent = cap;
        }
        e = s->nent++;
    }
    s->ent[e].post = s->t[r];
    s->ent[e].size = size;
    s->ent[e].req = q;
    s->ent[e].next = -1;
    if (k->tail[mine] >= 0)
        s->ent[k->tail[mine]].next = e;
    else
        k->head[mine] = e;
    k->tail[mine] = e;
    return q;
}

/* ---- collectives (critpath._collective, _bcast, _direct_bound) ---- */
static void bcast(const S *s, const double *T, int64_t root, int64_t size, double *out, double *have)
{
    int64_t P = s->P;
    have[root] = T[root];
    for (int64_t r = 0; r < P; r++)
        out[r] = T[r];
    for (int64_t rel = 1; rel < P; rel++) {
        int64_t r = (rel + root) % P, parent = ((rel - (rel & -rel)) + root) % P;
        double x = have[parent] + cost(s, parent, r, size);
        have[r] = T[r] >= x ? T[r] : x;
        out[r] = have[r];
    }
}

static double direct_bound(S *s, int64_t size)
{
    for (int64_t b = 0; b < s->nb; b++)
        if (s->bsize[b] == (double)size)
            return s->bval[b];
    int64_t P = s->P;
    for (int64_t k = 0; k < s->nres; k++)
        s->load[k] = 0.0;
    double serial = 0.0;
    for (int64_t i = 0; i < P; i++) {
        double own = 0.0;
        for (int64_t j = 0; j < P; j++) {
            if (i == j)
                continue;
            int64_t k = pair_of(s, i, j);
            own += s->lat[k] + (double)size * s->spb[k];
            for (int64_t e = s->pfirst[k]; e < s->pfirst[k + 1]; e++)
                s->load[s->prid[e]] += (double)size * s->pc[e];
        }
        serial = serial >= own ? serial : own;
    }
    /* max(serial, max(load.values(), default=0.0)) over the resources met */
    int any = 0;
    double m = 0.0;
    for (int64_t k = 0; k < s->nres; k++) {
        /* a resource never met stays 0.0 and cannot change a maximum over loads >= 0 unless
         * none was met, where Python's default is 0.0 too */
        if (!any || s->load[k] > m)
            m = s->load[k];
        any = 1;
    }
    double b = serial >= m ? serial : m;
    if (s->nb == s->capb) {
        int64_t cap = s->capb ? 2 * s->capb : 8;
        double *a = realloc(s->bsize, sizeof(double) * (size_t)cap), *c;
        if (!a) {
            s->oom = 1;
            return b;
        }
        s->bsize = a;
        c = realloc(s->bval, sizeof(double) * (size_t)cap);
        if (!c) {
            s->oom = 1;
            return b;
        }
        s->bval = c;
        s->capb = cap;
    }
    s->bsize[s->nb] = (double)size;
    s->bval[s->nb++] = b;
    return b;
}

static int coll_out(S *s, coll_t *c)
{
    int64_t P = s->P, size = c->size, root = c->root;
    double *T = c->t, *out = malloc(sizeof(double) * (size_t)P), *tmp = malloc(sizeof(double) * (size_t)P);
    double *have = malloc(sizeof(double) * (size_t)P);
    if (!out || !tmp || !have) {
        free(out); free(tmp); free(have);
        return -1;
    }
    switch (c->kind) {
    case C_BCAST:
        bcast(s, T, root, size, out, have);
        break;
    case C_REDUCE: {
        double m = -INFINITY;
        for (int64_t r = 0; r < P; r++) {
            double x = T[r] + cost(s, r, root, size);
            if (r == 0 || x > m)
                m = x;
        }
        for (int64_t r = 0; r < P; r++)
            out[r] = T[r];
        out[root] = m;
        break;
    }
    case C_ALLREDUCE: {
        double m = -INFINITY;
        for (int64_t r = 0; r < P; r++) {
            double x = T[r] + cost(s, r, 0, size);
            if (r == 0 || x > m)
                m = x;
            tmp[r] = T[r];
        }
        tmp[0] = m;
        bcast(s, tmp, 0, size, out, have);
        break;
    }
    case C_SCATTER:
        for (int64_t r = 0; r < P; r++) {
            double x = T[root] + cost(s, root, r, size);
            out[r] = T[r] >= x ? T[r] : x;
        }
        break;
    default: {
        double last = T[0];
        for (int64_t r = 1; r < P; r++)
            if (T[r] > last)
                last = T[r];
        if (P > DIRECT_MAX) {
            for (int64_t r = 0; r < P; r++) {
                double a = cost(s, 0, r, size), b = cost(s, r, 0, size);
                out[r] = last + (a >= b ? a : b);
            }
            break;
        }
        double b = size > 0 ? last + direct_bound(s, size) : 0.0;
        for (int64_t r = 0; r < P; r++) {
            double m = 0.0;
            for (int64_t i = 0; i < P; i++) {
                double x = T[i] + cost(s, i, r, size);
                if (i == 0 || x > m)
                    m = x;
            }
            out[r] = b >= m ? b : m;
        }
    }
    }
    double fl = c->flops * s->inv;
    for (int64_t r = 0; r < P; r++)
        out[r] = out[r] + fl;
    free(tmp);
    free(have);
    c->out = out;
    return 0;
}

static coll_t *coll_at(S *s, int64_t seq, int64_t ci)
{
    while (s->ncolls <= seq) {
        if (s->ncolls == s->capcoll) {
            int64_t cap = s->capcoll ? 2 * s->capcoll : 64;
            coll_t *a = realloc(s->coll, sizeof(coll_t) * (size_t)cap);
            if (!a) {
                s->oom = 1;
                return NULL;
            }
            s->coll = a;
            s->capcoll = cap;
        }
        memset(&s->coll[s->ncolls++], 0, sizeof(coll_t));
    }
    coll_t *c = &s->coll[seq];
    if (!c->t) {                       /* the first rank to enter gives its parameters */
        c->t = malloc(sizeof(double) * (size_t)s->P);
        if (!c->t) {
            s->oom = 1;
            return NULL;
        }
        c->kind = s->ckind[ci];
        c->root = (s->croot[ci] >= 0 && s->croot[ci] < s->P) ? s->croot[ci] : 0;
        c->size = s->csize[ci];
        c->flops = s->cflops[ci];
        c->left = s->P;
    }
    return c;
}

/* ---- a rank's run until it waits (critpath._Ranks.step) ---- */
static void step(S *s, int64_t r)
{
    double *t = s->t;
    int64_t P = s->P, last = s->roff[r + 1];
    for (;;) {
        if (s->wkind[r] != W_NONE) {
            double done;
            if (s->wkind[r] == W_REQS) {
                vec *w = &s->wreqs[r];
                for (int64_t i = 0; i < w->n; i++)
                    if (isnan(s->req[w->v[i]].end))
                        return;
                done = t[r];
                for (int64_t i = 0; i < w->n; i++)
                    if (s->req[w->v[i]].end > done)
                        done = s->req[w->v[i]].end;
                for (int64_t i = 0; i < w->n; i++)
                    release(s, w->v[i]);
                w->n = 0;
            } else {
                coll_t *c = &s->coll[s->wcoll[r]];
                if (c->count < P)
                    return;
                if (!c->out && coll_out(s, c) < 0) {
                    s->oom = 1;
                    return;
                }
                done = c->out[r];
                if (--c->left == 0) {
                    free(c->t);
                    free(c->out);
                    c->t = c->out = NULL;
                    c->count = -1;      /* spent */
                }
            }
            s->wkind[r] = W_NONE;
            if (done > t[r]) {
                t[r] = done;
                if (earliest(s) < done) {
                    requeue(s, r, done);
                    return;
                }
            }
        }
        if (s->pc_[r] >= last) {
            s->fin[r] = 1;
            s->left--;
            return;
        }
        int64_t a = s->pc_[r]++;
        int op = s->op[a];
        switch (op) {
        case A_COMPUTE:
            if (s->inv) {
                double fl;
                memcpy(&fl, &s->v[a], sizeof fl);
                t[r] += fl * s->inv;
                if (earliest(s) < t[r]) {
                    requeue(s, r, t[r]);
                    return;
                }
            }
            break;
        case A_SEND: case A_ISEND: case A_RECV: case A_IRECV: {
            int64_t peer = s->ia[a], size = s->v[a];
            if (peer < 0 || peer >= P)
                break;                   /* MPI_PROC_NULL: no message */
            int sending = op == A_SEND || op == A_ISEND;
            int64_t q = post(s, r, sending, sending ? r : peer, sending ? peer : r, s->ib[a], size);
            if (q < 0)
                return;
            if (sending && size < DETACHED)
                release(s, q);           /* detached: the sender's wait returns at once */
            else if (op == A_ISEND || op == A_IRECV) {
                if (vec_push(&s->pending[r], q) < 0) {
                    s->oom = 1;
                    return;
                }
            } else {
                if (vec_push(&s->wreqs[r], q) < 0) {
                    s->oom = 1;
                    return;
                }
                s->wkind[r] = W_REQS;
            }
            break;
        }
        case A_WAIT: {
            vec *p = &s->pending[r];
            int32_t src = s->ia[a], tag = s->ib[a];
            int64_t dst = s->v[a];
            for (int64_t i = 0; i < p->n; i++) {
                req_t *q = &s->req[p->v[i]];
                if (q->src == src && q->dst == dst && q->tag == tag) {
                    int64_t id = p->v[i];
                    memmove(p->v + i, p->v + i + 1, sizeof(int64_t) * (size_t)(p->n - i - 1));
                    p->n--;
                    if (vec_push(&s->wreqs[r], id) < 0) {
                        s->oom = 1;
                        return;
                    }
                    s->wkind[r] = W_REQS;
                    break;
                }
            }
            break;
        }
        case A_WAITLAST: {
            vec *p = &s->pending[r];
            int64_t n = s->ib[a] < p->n ? s->ib[a] : p->n;
            if (n > 0) {
                for (int64_t i = p->n - n; i < p->n; i++)
                    if (vec_push(&s->wreqs[r], p->v[i]) < 0) {
                        s->oom = 1;
                        return;
                    }
                p->n -= n;
                s->wkind[r] = W_REQS;
            }
            break;
        }
        case A_WAITALL: {
            vec *p = &s->pending[r];
            if (p->n) {
                for (int64_t i = 0; i < p->n; i++)
                    if (vec_push(&s->wreqs[r], p->v[i]) < 0) {
                        s->oom = 1;
                        return;
                    }
                p->n = 0;
                s->wkind[r] = W_REQS;
            }
            break;
        }
        default: {                       /* a collective */
            int64_t seq = s->ncoll[r]++;
            coll_t *c = coll_at(s, seq, s->v[a]);
            if (!c)
                return;
            c->t[r] = t[r];
            c->count++;
            s->wkind[r] = W_COLL;
            s->wcoll[r] = seq;
            if (c->count == P)
                for (int64_t x = 0; x < P; x++)
                    wake(s, x);
        }
        }
    }
}

/* Replays P ranks' actions: rank r's are roff[r] .. roff[r+1] of (op, ia, ib, v):
 *   compute: v = the flops (a double's bits); send/isend/recv/irecv: ia = peer, ib = tag,
 *   v = bytes; wait: ia = src, v = dst, ib = tag; waitlast: ib = n; coll: v = its index in
 *   (ckind, croot, csize, cflops).
 * A message from i to j (i != j): pair k = E[rank_node[i] * U + rank_node[j]] (k = 0 from a
 * rank to itself), latency lat[k], seconds per byte spb[k], resources prid[pfirst[k] ..
 * pfirst[k+1]) (numbered below nres) at pc[] seconds per byte.
 * inv: 1 / the cores' speed (0: compute free). fifo: critical_latency's order (a queue, no
 * yielding) instead of run_time's heap. Returns 0 and the end in *end_out, 1 when some rank
 * never finished (the replay stuck), -2 out of memory. */
int rm_inturn_replay(int64_t P, const int64_t *roff, const int8_t *op, const int32_t *ia, const int32_t *ib,
                     const int64_t *v, const int8_t *ckind, const int32_t *croot, const int64_t *csize,
                     const double *cflops, int64_t U, const int32_t *rank_node, const int32_t *E,
                     const double *lat, const double *spb,
                     const int64_t *pfirst, const int32_t *prid, const double *pc, int64_t nres,
                     double inv, int contention, int fifo, double *end_out)
{
    S s;
    memset(&s, 0, sizeof s);
    s.P = P; s.roff = roff; s.op = op; s.ia = ia; s.ib = ib; s.v = v;
    s.ckind = ckind; s.croot = croot; s.csize = csize; s.cflops = cflops;
    s.U = U; s.rank_node = rank_node; s.E = E; s.lat = lat; s.spb = spb; s.pfirst = pfirst; s.prid = prid; s.pc = pc;
    s.nres = nres; s.inv = inv; s.contention = contention; s.fifo = fifo;
    s.freereq = s.freeent = -1;
    int rc = -2;
    size_t n = (size_t)(P > 0 ? P : 1);
    s.t = calloc(n, sizeof(double));
    s.pc_ = malloc(n * sizeof(int64_t));
    s.fin = calloc(n, 1);
    s.queued = calloc(n, 1);
    s.wkind = calloc(n, 1);
    s.wcoll = calloc(n, sizeof(int64_t));
    s.ncoll = calloc(n, sizeof(int64_t));
    s.wreqs = calloc(n, sizeof(vec));
    s.pending = calloc(n, sizeof(vec));
    s.ht = malloc(n * sizeof(double));
    s.hr = malloc(n * sizeof(int64_t));
    s.caph = (int64_t)n;
    s.busy = calloc((size_t)(nres > 0 ? nres : 1), sizeof(double));
    s.load = calloc((size_t)(nres > 0 ? nres : 1), sizeof(double));
    if (!s.t || !s.pc_ || !s.fin || !s.queued || !s.wkind || !s.wcoll || !s.ncoll || !s.wreqs || !s.pending
        || !s.ht || !s.hr || !s.busy || !s.load)
        goto out;
    s.left = P;
    for (int64_t r = 0; r < P; r++) {
        s.pc_[r] = roff[r];
        s.queued[r] = 1;
        push(&s, 0.0, r);
    }
    while (s.hn > 0 && !s.oom) {       /* (a push that ran out of memory stops the loop) */
        int64_t r = pop(&s);
        s.queued[r] = 0;
        if (!s.fin[r])
            step(&s, r);
    }
    if (s.oom)
        goto out;
    if (s.left) {
        rc = 1;
    } else {
        double m = 0.0;
        for (int64_t r = 0; r < P; r++)
            if (r == 0 || s.t[r] > m)
                m = s.t[r];
        *end_out = m;
        rc = 0;
    }
out:
    if (s.wreqs)
        for (int64_t r = 0; r < P; r++)
            free(s.wreqs[r].v);
    if (s.pending)
        for (int64_t r = 0; r < P; r++)
            free(s.pending[r].v);
    for (int64_t c = 0; c < s.ncolls; c++) {
        free(s.coll[c].t);
        free(s.coll[c].out);
    }
    free(s.coll); free(s.t); free(s.pc_); free(s.fin); free(s.queued); free(s.wkind); free(s.wcoll);
    free(s.ncoll); free(s.wreqs); free(s.pending); free(s.ht); free(s.hr); free(s.busy); free(s.load);
    free(s.req); free(s.ent); free(s.tab); free(s.bsize); free(s.bval);
    return rc;
}
