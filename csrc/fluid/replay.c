/* The replays of an SMPI trace (mapper/critpath.py: critical_latency, run_time and
 * run_time_fluid): the event loops that were Python, in C. In Python they were the mapping's
 * cost with a trace: NPB CG B 128's 18.9 million actions took 30-40 s an estimate, and a
 * rankmap-c mapping asks for dozens. Every step is the Python one's, in the same order
 * (the Python loops are kept in tests/replay_reference.py as the reference): ranks run
 * from a first-in first-out queue (critical_latency), a heap of (clock, rank) (run_time) or a
 * heap of (time, sequence) events that also starts flows (run_time_fluid); messages are
 * matched first-in first-out per (source, destination, tag); every sum and maximum is taken in
 * the order the Python code takes it, so the times are the same to the last bit. Built with
 * -ffp-contract=off: a fused multiply-add would change the last bits. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { A_COMPUTE, A_SEND, A_ISEND, A_RECV, A_IRECV, A_WAIT, A_WAITALL, A_WAITLAST, A_COLL };
enum { C_BCAST, C_REDUCE, C_ALLREDUCE, C_SCATTER, C_DIRECT };
enum { W_NONE, W_REQS, W_COLL };
enum { M_INTURN, M_CRIT, M_FLUID };     /* run_time, critical_latency, run_time_fluid */

/* the sharing (fluid.c) */
int64_t rm_fluid_share(int64_t nf, const int64_t *flow_route, const int64_t *r_first, const int64_t *e_rid,
                       const double *e_c, const double *e_cip, const double *r_ip, int64_t *res_map,
                       double budget, int64_t spent, double *rate_out);

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

/* a request: [src, dst, tag, end]; end NaN while its message is under way; the ranks to wake
 * when it completes (the flow replay) */
typedef struct { double end; int32_t src, dst, tag; int8_t matched, owned; int64_t next_free; vec waiters; } req_t;
/* a flow that starts moving bytes at an event of the heap: (bytes, pair, its two requests) */
typedef struct { int64_t size, pair, q0, q1, next_free; } start_t;
/* a half posted before its other half: (post time, size, request), in a key's queue */
typedef struct { double post; int64_t size, req, next; } ent_t;
/* a (src, dst, tag) key's two queues: halves posted by senders and by receivers */
typedef struct { int32_t src, dst, tag; int64_t head[2], tail[2]; int8_t used; } slot_t;
typedef struct { double *t, *out; int64_t count, left; int8_t kind; int32_t root; int64_t size; double flops; } coll_t;

typedef struct {
    int64_t P;
    /* the schedule */
    const int64_t *roff; const int8_t *op; const int32_t *ia, *ib; const int64_t *v;
    const int8_t *ckind; const int32_t *croot; const int64_t *csize; const double *cflops;
    /* the pairs */
    int64_t U; const int32_t *rank_node, *E;
    const double *lat, *spb; const int64_t *pfirst; const int32_t *prid; const double *pc;
    int64_t nres; double inv; int contention, fifo, mode;
    /* the ranks */
    double *t; int64_t *pc_; int8_t *fin, *queued, *wkind; int64_t *wcoll, *ncoll; vec *wreqs, *pending;
    int64_t left;
    /* the queue of ranks to run: a ring of ranks (critical_latency), or a heap of (time, key,
     * item) where key is the rank (run_time) or the event's sequence number (run_time_fluid) and
     * item a rank, or -1 - a flow start */
    double *ht; int64_t *hr, *hi, hn, caph, qhead, seq;
    /* the flow replay: flows starting (a pool), the flows under way in the order they started,
     * the routes as the sharing reads them, the clock, the next end, the work spent */
    start_t *st; int64_t nst, capst, freest;
    double *f_left, *f_rate; int64_t *f_pair, *f_q0, *f_q1, nf, capf, *f_route; double *f_out;
    int64_t *e_rid64, *res_map; double *e_cip, *r_ip;
    double now, nxt, budget; int64_t spent; int too_costly;
    int64_t *wid, *reg;                 /* each rank's current wait's number, the one it registered for */
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
static int before(double ta, int64_t ka, double tb, int64_t kb)
{
    return ta < tb || (ta == tb && ka < kb);
}

/* a rank is in the queue of critical_latency at most once (wake only queues a rank not
 * queued); run_time's heap may hold a rank twice, as Python's does: a rank that wakes itself
 * (the last to enter a collective, a message to itself) and then yields is pushed again */
static void push_item(S *s, double when, int64_t key, int64_t item)
{
    if (s->fifo) {
        s->hr[(s->qhead + s->hn++) % s->P] = item;
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
        int64_t *it = realloc(s->hi, sizeof(int64_t) * (size_t)cap);
        if (!it) {
            s->oom = 1;
            return;
        }
        s->hi = it;
        s->caph = cap;
    }
    int64_t i = s->hn++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!before(when, key, s->ht[p], s->hr[p]))
            break;
        s->ht[i] = s->ht[p];
        s->hr[i] = s->hr[p];
        s->hi[i] = s->hi[p];
        i = p;
    }
    s->ht[i] = when;
    s->hr[i] = key;
    s->hi[i] = item;
}

/* a rank to run at `when`: keyed by itself (run_time) or by the next sequence number */
static void push(S *s, double when, int64_t r)
{
    push_item(s, when, s->mode == M_FLUID ? s->seq++ : r, r);
}

/* the first item; its time in *when */
static int64_t pop(S *s, double *when)
{
    if (s->fifo) {
        int64_t r = s->hr[s->qhead];
        s->qhead = (s->qhead + 1) % s->P;
        s->hn--;
        *when = 0.0;
        return r;
    }
    int64_t top = s->hi[0];
    *when = s->ht[0];
    double lt = s->ht[--s->hn];
    int64_t lk = s->hr[s->hn], li = s->hi[s->hn];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= s->hn)
            break;
        if (c + 1 < s->hn && before(s->ht[c + 1], s->hr[c + 1], s->ht[c], s->hr[c]))
            c++;
        if (!before(s->ht[c], s->hr[c], lt, lk))
            break;
        s->ht[i] = s->ht[c];
        s->hr[i] = s->hr[c];
        s->hi[i] = s->hi[c];
        i = c;
    }
    s->ht[i] = lt;
    s->hr[i] = lk;
    s->hi[i] = li;
    return top;
}

static double earliest(S *s)
{
    double h = (s->fifo || s->hn == 0) ? INFINITY : s->ht[0];
    if (s->mode == M_FLUID && s->nf > 0 && s->nxt < h)
        return s->nxt;
    return h;
}

/* a rank whose wait may be over, to run again: at its clock (run_time), at `when` or its
 * clock if later (run_time_fluid) */
static void wake_at(S *s, int64_t x, double when)
{
    if (!s->queued[x] && !s->fin[x]) {
        s->queued[x] = 1;
        if (s->mode == M_FLUID)
            push(s, when >= s->t[x] ? when : s->t[x], x);
        else
            push(s, s->t[x], x);
    }
}

static void wake(S *s, int64_t x)
{
    wake_at(s, x, s->t[x]);
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
        s->req[q].waiters.v = NULL;
        s->req[q].waiters.cap = 0;
    }
    req_t *x = &s->req[q];
    x->end = NAN;
    x->src = src;
    x->dst = dst;
    x->tag = tag;
    x->matched = 0;
    x->owned = 1;
    x->waiters.n = 0;
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

/* request q completes at `end`: the ranks registered on it are woken (the flow replay) */
static void complete(S *s, int64_t q, double end)
{
    s->req[q].end = end;
    vec *w = &s->req[q].waiters;
    for (int64_t i = 0; i < w->n; i++)
        wake_at(s, w->v[i], end);
    w->n = 0;
    matched(s, q);
}

static uint64_t hash3(int32_t src, int32_t dst, int32_t tag)
{
    uint64_t k = ((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) ^ ((uint64_t)(uint32_t)tag * 0x9e3779b97f4a7c15ULL);
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/* the queues of (src, dst, tag): an open-addressing table, grown at half full */
static slot_t *slot(S *s, int32_t src, int32_t dst, int32_t tag)
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
                slot_t *o = &s->tab[i];
                uint64_t h = hash3(o->src, o->dst, o->tag) & (uint64_t)(cap - 1);
                while (t[h].used)
                    h = (h + 1) & (uint64_t)(cap - 1);
                t[h] = *o;
            }
        free(s->tab);
        s->tab = t;
        s->captab = cap;
    }
    uint64_t h = hash3(src, dst, tag) & (uint64_t)(s->captab - 1);
    while (s->tab[h].used && (s->tab[h].src != src || s->tab[h].dst != dst || s->tab[h].tag != tag))
        h = (h + 1) & (uint64_t)(s->captab - 1);
    slot_t *x = &s->tab[h];
    if (!x->used) {
        x->used = 1;
        x->src = src;
        x->dst = dst;
        x->tag = tag;
        x->head[0] = x->head[1] = x->tail[0] = x->tail[1] = -1;
        s->ntab++;
    }
    return x;
}

/* ---- the flow replay (critpath.run_time_fluid) ---- */
/* a message matched at t0 (run_time_fluid's start and message): on the loopback, or with no
 * bytes, done at a fixed time (the waiters on the other half woken then); else a flow that
 * starts moving bytes after the route's latency */
static int flow_message(S *s, int64_t i, int64_t j, int64_t size, double t0, int64_t q0, int64_t q1)
{
    int64_t k = pair_of(s, i, j);
    if (s->pfirst[k] == s->pfirst[k + 1] || !size) {
        double done = t0 + s->lat[k] + (double)size * s->spb[k];
        s->req[q0].end = done;
        matched(s, q0);
        complete(s, q1, done);
        return 0;
    }
    int64_t f;
    if (s->freest >= 0) {
        f = s->freest;
        s->freest = s->st[f].next_free;
    } else {
        if (s->nst == s->capst) {
            int64_t cap = s->capst ? 2 * s->capst : 1024;
            start_t *a = realloc(s->st, sizeof(start_t) * (size_t)cap);
            if (!a) {
                s->oom = 1;
                return -1;
            }
            s->st = a;
            s->capst = cap;
        }
        f = s->nst++;
    }
    s->st[f].size = size;
    s->st[f].pair = k;
    s->st[f].q0 = q0;
    s->st[f].q1 = q1;
    push_item(s, t0 + s->lat[k], s->seq++, -1 - f);
    return 0;
}

static void advance(S *s, double t)
{
    double dt = t - s->now;
    if (dt > 0) {                       /* never back: an event behind the clock happens now */
        for (int64_t f = 0; f < s->nf; f++)
            s->f_left[f] -= s->f_rate[f] * dt;
        s->now = t;
    }
}

static int add_flow(S *s, int64_t st)
{
    if (s->nf == s->capf) {
        int64_t cap = s->capf ? 2 * s->capf : 256;
        double *l = realloc(s->f_left, sizeof(double) * (size_t)cap), *r, *o;
        if (!l)
            return -1;
        s->f_left = l;
        if (!(r = realloc(s->f_rate, sizeof(double) * (size_t)cap)))
            return -1;
        s->f_rate = r;
        if (!(o = realloc(s->f_out, sizeof(double) * (size_t)cap)))
            return -1;
        s->f_out = o;
        int64_t **arr[4] = {&s->f_pair, &s->f_q0, &s->f_q1, &s->f_route};
        for (int a = 0; a < 4; a++) {
            int64_t *x = realloc(*arr[a], sizeof(int64_t) * (size_t)cap);
            if (!x)
                return -1;
            *arr[a] = x;
        }
        s->capf = cap;
    }
    start_t *x = &s->st[st];
    int64_t f = s->nf++;
    s->f_left[f] = (double)x->size;
    s->f_rate[f] = 0.0;
    s->f_pair[f] = x->pair;
    s->f_q0[f] = x->q0;
    s->f_q1[f] = x->q1;
    x->next_free = s->freest;
    s->freest = st;
    return 0;
}

/* the max-min rates of the flows under way (fluid.c), then when the first ends */
static void share(S *s)
{
    for (int64_t f = 0; f < s->nf; f++)
        s->f_route[f] = s->f_pair[f];
    int64_t w = rm_fluid_share(s->nf, s->f_route, s->pfirst, s->e_rid64, s->pc, s->e_cip, s->r_ip, s->res_map,
                               s->budget, s->spent, s->f_out);
    if (w == -1) {
        s->too_costly = 1;
        return;
    }
    if (w < 0) {
        s->oom = 1;
        return;
    }
    s->spent += w;
    for (int64_t f = 0; f < s->nf; f++)
        s->f_rate[f] = s->f_out[f];
    double m = INFINITY;
    for (int64_t f = 0; f < s->nf; f++)
        if (s->f_rate[f] > 0) {
            double x = s->now + s->f_left[f] / s->f_rate[f];
            if (x < m)
                m = x;
        }
    s->nxt = m;
}

/* the flows done at te (within eps of their end), or else the first to end: their requests
 * complete, in the order the flows started */
static void end_flows(S *s, double te, double eps)
{
    int64_t n = s->nf, ended = 0;
    char *done = (char *)s->f_route;    /* (scratch: the routes are written again by share) */
    for (int64_t f = 0; f < n; f++) {
        double l = s->f_left[f], r = s->f_rate[f];
        done[f] = l <= 1e-6 || (r > 0 && l / r <= eps);
        ended += done[f];
    }
    if (!ended && n) {
        int64_t best = 0;
        double bt = INFINITY;
        for (int64_t f = 0; f < n; f++) {
            double x = s->f_rate[f] > 0 ? s->f_left[f] / s->f_rate[f] : INFINITY;
            if (f == 0 || x < bt) {
                bt = x;
                best = f;
            }
        }
        done[best] = 1;
    }
    int64_t m = 0;
    int64_t *q0 = malloc(sizeof(int64_t) * (size_t)(n ? n : 1)), *q1 = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    int64_t nd = 0;
    if (!q0 || !q1) {
        free(q0);
        free(q1);
        s->oom = 1;
        return;
    }
    for (int64_t f = 0; f < n; f++) {
        if (done[f]) {
            q0[nd] = s->f_q0[f];
            q1[nd++] = s->f_q1[f];
            continue;
        }
        s->f_left[m] = s->f_left[f];
        s->f_rate[m] = s->f_rate[f];
        s->f_pair[m] = s->f_pair[f];
        s->f_q0[m] = s->f_q0[f];
        s->f_q1[m] = s->f_q1[f];
        m++;
    }
    s->nf = m;
    for (int64_t d = 0; d < nd; d++) {
        complete(s, q0[d], te);
        complete(s, q1[d], te);
    }
    free(q0);
    free(q1);
}

/* rank r's half of src -> dst (critpath._Ranks._post): matched with the other half if that
 * was posted first (the message then moves, with the sender's size), else queued */
static int64_t post(S *s, int64_t r, int sending, int64_t src, int64_t dst, int32_t tag, int64_t size)
{
    int64_t q = new_req(s, (int32_t)src, (int32_t)dst, tag);
    if (q < 0)
        return -1;
    slot_t *k = slot(s, (int32_t)src, (int32_t)dst, tag);
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
        if (s->mode == M_FLUID) {
            if (flow_message(s, src, dst, sz, t0, q, other) < 0)
                return -1;
            return q;
        }
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
                int open = 0;
                for (int64_t i = 0; i < w->n; i++)
                    if (isnan(s->req[w->v[i]].end))
                        open = 1;
                if (open) {
                    /* the flow replay: once per wait, the rank is registered on the requests
                     * open (they only complete, so a second registration would only wake it
                     * where the first already has) */
                    if (s->mode == M_FLUID && s->reg[r] != s->wid[r]) {
                        s->reg[r] = s->wid[r];
                        for (int64_t i = 0; i < w->n; i++)
                            if (isnan(s->req[w->v[i]].end) && vec_push(&s->req[w->v[i]].waiters, r) < 0) {
                                s->oom = 1;
                                return;
                            }
                    }
                    return;
                }
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
                s->wid[r]++;
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
                    s->wid[r]++;
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
                s->wid[r]++;
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
                s->wid[r]++;
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
            if (c->count == P) {
                double last = c->t[0];
                for (int64_t x = 1; x < P; x++)
                    if (c->t[x] > last)
                        last = c->t[x];
                for (int64_t x = 0; x < P; x++)
                    wake_at(s, x, last);
            }
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
 * pfirst[k+1]) (numbered below nres) at pc[] seconds per byte; npairs pairs.
 * inv: 1 / the cores' speed (0: compute free). mode: M_INTURN (run_time, with or without
 * contention), M_CRIT (critical_latency), M_FLUID (run_time_fluid: weight_s, budget).
 * Returns 0 and the end in *end_out, 1 when some rank never finished (the replay stuck), 2
 * when the flow replay's work passed its budget, -2 out of memory. */
static int replay(int64_t P, const int64_t *roff, const int8_t *op, const int32_t *ia, const int32_t *ib,
                  const int64_t *v, const int8_t *ckind, const int32_t *croot, const int64_t *csize,
                  const double *cflops, int64_t U, const int32_t *rank_node, const int32_t *E,
                  const double *lat, const double *spb, const int64_t *pfirst, const int32_t *prid, const double *pc,
                  int64_t npairs, int64_t nres, double inv, int contention, int mode, double weight_s, double budget,
                  double *end_out)
{
    S s;
    memset(&s, 0, sizeof s);
    s.P = P; s.roff = roff; s.op = op; s.ia = ia; s.ib = ib; s.v = v;
    s.ckind = ckind; s.croot = croot; s.csize = csize; s.cflops = cflops;
    s.U = U; s.rank_node = rank_node; s.E = E; s.lat = lat; s.spb = spb; s.pfirst = pfirst; s.prid = prid; s.pc = pc;
    s.nres = nres; s.inv = inv; s.contention = contention; s.mode = mode; s.fifo = mode == M_CRIT;
    s.freereq = s.freeent = s.freest = -1;
    s.budget = budget;
    s.nxt = INFINITY;
    int rc = -2;
    size_t n = (size_t)(P > 0 ? P : 1), nr = (size_t)(nres > 0 ? nres : 1);
    s.t = calloc(n, sizeof(double));
    s.pc_ = malloc(n * sizeof(int64_t));
    s.fin = calloc(n, 1);
    s.queued = calloc(n, 1);
    s.wkind = calloc(n, 1);
    s.wcoll = calloc(n, sizeof(int64_t));
    s.ncoll = calloc(n, sizeof(int64_t));
    s.wreqs = calloc(n, sizeof(vec));
    s.pending = calloc(n, sizeof(vec));
    s.wid = calloc(n, sizeof(int64_t));
    s.reg = malloc(n * sizeof(int64_t));
    s.ht = malloc(n * sizeof(double));
    s.hr = malloc(n * sizeof(int64_t));
    s.hi = malloc(n * sizeof(int64_t));
    s.caph = (int64_t)n;
    s.busy = calloc(nr, sizeof(double));
    s.load = calloc(nr, sizeof(double));
    if (!s.t || !s.pc_ || !s.fin || !s.queued || !s.wkind || !s.wcoll || !s.ncoll || !s.wreqs || !s.pending
        || !s.wid || !s.reg || !s.ht || !s.hr || !s.hi || !s.busy || !s.load)
        goto out;
    for (int64_t r = 0; r < P; r++)
        s.reg[r] = -1;
    if (mode == M_FLUID) {             /* the routes as the sharing reads them (critpath._Flows._prepare) */
        int64_t ne = pfirst[npairs];
        s.e_rid64 = malloc(sizeof(int64_t) * (size_t)(ne ? ne : 1));
        s.e_cip = malloc(sizeof(double) * (size_t)(ne ? ne : 1));
        s.r_ip = malloc(sizeof(double) * (size_t)(npairs ? npairs : 1));
        s.res_map = malloc(sizeof(int64_t) * nr);
        if (!s.e_rid64 || !s.e_cip || !s.r_ip || !s.res_map)
            goto out;
        for (size_t x = 0; x < nr; x++)
            s.res_map[x] = -1;
        for (int64_t k = 0; k < npairs; k++) {
            double sum = 0.0;
            for (int64_t e = pfirst[k]; e < pfirst[k + 1]; e++)
                sum += pc[e];
            double ip = 1.0 / (lat[k] + weight_s * sum);   /* a flow's share ~ 1 / its penalty */
            s.r_ip[k] = ip;
            for (int64_t e = pfirst[k]; e < pfirst[k + 1]; e++) {
                s.e_rid64[e] = prid[e];
                s.e_cip[e] = pc[e] * ip;
            }
        }
    }
    s.left = P;
    for (int64_t r = 0; r < P; r++) {
        s.pc_[r] = roff[r];
        s.queued[r] = 1;
        push(&s, 0.0, r);
    }
    /* (a push or a sharing that ran out of memory, or a sharing over the budget, stops the loop) */
    while ((s.hn > 0 || s.nf > 0) && !s.oom && !s.too_costly) {
        double tm;
        if (mode == M_FLUID) {
            double th = s.hn ? s.ht[0] : INFINITY;
            if (s.nf > 0 && s.nxt <= th) {          /* flows end first */
                double te = s.nxt;
                advance(&s, te);
                end_flows(&s, te, 1e-12 * (te >= 1e-9 ? te : 1e-9));  /* within rounding of their end: together */
                share(&s);
                continue;
            }
        }
        int64_t it = pop(&s, &tm);
        if (it < 0) {                   /* the flows that start at this instant, then one sharing for all */
            advance(&s, tm);
            for (;;) {
                if (add_flow(&s, -1 - it) < 0) {
                    s.oom = 1;
                    break;
                }
                if (!s.hn || s.hi[0] >= 0 || s.ht[0] > tm)
                    break;
                it = pop(&s, &tm);
            }
            if (!s.oom)
                share(&s);
            continue;
        }
        s.queued[it] = 0;
        if (mode == M_FLUID && s.t[it] < s.now)    /* a rank cannot act before the clock (a collective's exit */
            s.t[it] = s.now;                       /* computed for it below the time its last rank entered) */
        if (!s.fin[it])
            step(&s, it);
    }
    if (s.oom)
        goto out;
    if (s.too_costly) {
        rc = 2;
    } else if (s.left) {
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
    for (int64_t q = 0; q < s.nreq; q++)
        free(s.req[q].waiters.v);
    free(s.coll); free(s.t); free(s.pc_); free(s.fin); free(s.queued); free(s.wkind); free(s.wcoll);
    free(s.ncoll); free(s.wreqs); free(s.pending); free(s.wid); free(s.reg); free(s.ht); free(s.hr); free(s.hi);
    free(s.busy); free(s.load); free(s.req); free(s.ent); free(s.tab); free(s.bsize); free(s.bval); free(s.st);
    free(s.f_left); free(s.f_rate); free(s.f_out); free(s.f_pair); free(s.f_q0); free(s.f_q1); free(s.f_route);
    free(s.e_rid64); free(s.e_cip); free(s.r_ip); free(s.res_map);
    return rc;
}

/* run_time (fifo 0) and critical_latency (fifo 1); arguments as replay's */
int rm_inturn_replay(int64_t P, const int64_t *roff, const int8_t *op, const int32_t *ia, const int32_t *ib,
                     const int64_t *v, const int8_t *ckind, const int32_t *croot, const int64_t *csize,
                     const double *cflops, int64_t U, const int32_t *rank_node, const int32_t *E,
                     const double *lat, const double *spb,
                     const int64_t *pfirst, const int32_t *prid, const double *pc, int64_t nres,
                     double inv, int contention, int fifo, double *end_out)
{
    return replay(P, roff, op, ia, ib, v, ckind, croot, csize, cflops, U, rank_node, E, lat, spb, pfirst, prid, pc,
                  0, nres, inv, contention, fifo ? M_CRIT : M_INTURN, 0.0, INFINITY, end_out);
}

/* run_time_fluid: the flows share links and limiters max-min (fluid.c), each weighted by 1 /
 * (latency + weight_s x its route's seconds per byte); `budget` caps the sharing's work */
int rm_fluid_replay(int64_t P, const int64_t *roff, const int8_t *op, const int32_t *ia, const int32_t *ib,
                    const int64_t *v, const int8_t *ckind, const int32_t *croot, const int64_t *csize,
                    const double *cflops, int64_t U, const int32_t *rank_node, const int32_t *E,
                    const double *lat, const double *spb, const int64_t *pfirst, const int32_t *prid,
                    const double *pc, int64_t npairs, int64_t nres, double inv, double weight_s, double budget,
                    double *end_out)
{
    return replay(P, roff, op, ia, ib, v, ckind, croot, csize, cflops, U, rank_node, E, lat, spb, pfirst, prid, pc,
                  npairs, nres, inv, 1, M_FLUID, weight_s, budget, end_out);
}
