/* Correctness of MPI_Allreduce / MPI_Reduce / MPI_Bcast as the program sees them (rankmap's
 * kernels when librankmap_coll is preloaded) against the MPI library's own PMPI_ calls on the
 * same data: every predefined op on every datatype it is defined for, counts 0, 1, prime,
 * large; roots 0, last, middle; MPI_COMM_WORLD and a reordered sub-communicator; MPI_IN_PLACE.
 * Integer, logical, bitwise and pair results must be identical; floating sums are of small
 * dyadic numbers (exact whatever the order); floating products get a relative tolerance.
 * Prints "colltest: N checks, 0 failures" and exits 1 on any failure.
 *   colltest [large_count [quick]]   (large_count doubles in the large-message checks, default
 *   2^21 = 16 MB; quick: one datatype of each kind instead of all) */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { SINT, UINT, FLT, CPLX, BOOL_, BYTE_, PAIR };
typedef struct {
    MPI_Datatype dt;
    const char *name;
    enum kind k;
    int size;   /* of the value part */
} tinfo;

static const tinfo TYPES[] = {
    {MPI_SIGNED_CHAR, "signed char", SINT, 1}, {MPI_SHORT, "short", SINT, 2}, {MPI_INT, "int", SINT, 4},
    {MPI_LONG, "long", SINT, 8}, {MPI_LONG_LONG, "long long", SINT, 8}, {MPI_UNSIGNED_CHAR, "unsigned char", UINT, 1},
    {MPI_UNSIGNED_SHORT, "unsigned short", UINT, 2}, {MPI_UNSIGNED, "unsigned", UINT, 4},
    {MPI_UNSIGNED_LONG, "unsigned long", UINT, 8}, {MPI_INT8_T, "int8_t", SINT, 1}, {MPI_INT16_T, "int16_t", SINT, 2},
    {MPI_INT32_T, "int32_t", SINT, 4}, {MPI_INT64_T, "int64_t", SINT, 8}, {MPI_UINT8_T, "uint8_t", UINT, 1},
    {MPI_UINT16_T, "uint16_t", UINT, 2}, {MPI_UINT32_T, "uint32_t", UINT, 4}, {MPI_UINT64_T, "uint64_t", UINT, 8},
    {MPI_FLOAT, "float", FLT, 4}, {MPI_DOUBLE, "double", FLT, 8}, {MPI_LONG_DOUBLE, "long double", FLT, 16},
    {MPI_C_FLOAT_COMPLEX, "float complex", CPLX, 8}, {MPI_C_DOUBLE_COMPLEX, "double complex", CPLX, 16},
    {MPI_C_BOOL, "bool", BOOL_, 1}, {MPI_BYTE, "byte", BYTE_, 1},
    {MPI_2INT, "2int", PAIR, 4}, {MPI_DOUBLE_INT, "double_int", PAIR, 8}, {MPI_FLOAT_INT, "float_int", PAIR, 4},
    {MPI_LONG_INT, "long_int", PAIR, 8}, {MPI_SHORT_INT, "short_int", PAIR, 2},
};
#define NTYPES (int)(sizeof TYPES / sizeof TYPES[0])

typedef struct {
    MPI_Op op;
    const char *name;
} opinfo;
static const opinfo OPS[] = {{MPI_SUM, "sum"},   {MPI_PROD, "prod"}, {MPI_MIN, "min"},       {MPI_MAX, "max"},
                             {MPI_LAND, "land"}, {MPI_LOR, "lor"},   {MPI_LXOR, "lxor"},     {MPI_BAND, "band"},
                             {MPI_BOR, "bor"},   {MPI_BXOR, "bxor"}, {MPI_MINLOC, "minloc"}, {MPI_MAXLOC, "maxloc"}};
#define NOPS (int)(sizeof OPS / sizeof OPS[0])

static int valid(const tinfo *t, MPI_Op op)
{
    if (op == MPI_MINLOC || op == MPI_MAXLOC)
        return t->k == PAIR;
    if (t->k == PAIR)
        return 0;
    if (op == MPI_SUM || op == MPI_PROD)
        return t->k == SINT || t->k == UINT || t->k == FLT || t->k == CPLX;
    if (op == MPI_MIN || op == MPI_MAX)
        return t->k == SINT || t->k == UINT || t->k == FLT;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return t->k == SINT || t->k == UINT || t->k == BOOL_;
    return t->k == SINT || t->k == UINT || t->k == BYTE_;   /* bitwise */
}

static long checks, failures;
static int me, wsize;

/* small values: sums never overflow, floating sums are exact; products stay near 1 */
static void fill(const tinfo *t, MPI_Op op, void *buf, size_t n, MPI_Aint ext, int rank)
{
    for (size_t i = 0; i < n; i++) {
        char *e = (char *)buf + i * (size_t)ext;
        long v = (long)((rank * 13 + (long)i * 5) % 17) - (t->k == SINT ? 8 : 0);
        int prod = op == MPI_PROD;
        if (prod && (t->k == SINT || t->k == UINT))
            v = (rank + (long)i) % 3 == 0 ? 2 : 1;
        switch (t->k) {
        case SINT:
        case UINT:
        case BYTE_:
            if (t->size == 1) { int8_t x = (int8_t)v; memcpy(e, &x, 1); }
            else if (t->size == 2) { int16_t x = (int16_t)v; memcpy(e, &x, 2); }
            else if (t->size == 4) { int32_t x = (int32_t)v; memcpy(e, &x, 4); }
            else { int64_t x = v; memcpy(e, &x, 8); }
            if (t->k == BYTE_) { uint8_t x = (uint8_t)(rank * 37 + i * 11); memcpy(e, &x, 1); }
            break;
        case FLT: {
            double d = prod ? 1.0 + (double)v / 64.0 : (double)v / 64.0 - 0.125;
            if (t->size == 4) { float x = (float)d; memcpy(e, &x, 4); }
            else if (t->size == 8) memcpy(e, &d, 8);
            else { long double x = d; memcpy(e, &x, sizeof x); }
            break;
        }
        case CPLX: {
            double re = prod ? 1.0 + (double)v / 256.0 : (double)v / 64.0, im = prod ? (double)(v % 3) / 256.0 : -re;
            if (t->size == 8) { float complex x = (float)re + (float)im * I; memcpy(e, &x, 8); }
            else { double complex x = re + im * I; memcpy(e, &x, 16); }
            break;
        }
        case BOOL_: { _Bool x = (rank + i) % 3 != 0; memcpy(e, &x, 1); break; }
        case PAIR: {
            int idx = rank;
            long val = (long)((rank * 7 + (long)i * 3) % 5);   /* ties on purpose */
            if (t->dt == MPI_2INT) { int x[2] = {(int)val, idx}; memcpy(e, x, 8); }
            else if (t->dt == MPI_DOUBLE_INT) { struct { double v; int i; } x = {(double)val, idx}; memcpy(e, &x, sizeof x); }
            else if (t->dt == MPI_FLOAT_INT) { struct { float v; int i; } x = {(float)val, idx}; memcpy(e, &x, sizeof x); }
            else if (t->dt == MPI_LONG_INT) { struct { long v; int i; } x = {val, idx}; memcpy(e, &x, sizeof x); }
            else { struct { short v; int i; } x = {(short)val, idx}; memcpy(e, &x, sizeof x); }
            break;
        }
        }
    }
}

/* do two results agree? exact, except floating products (relative 1e-5 float, 1e-12 else) */
static int same(const tinfo *t, MPI_Op op, const void *a, const void *b, size_t n, MPI_Aint ext)
{
    for (size_t i = 0; i < n; i++) {
        const char *x = (const char *)a + i * (size_t)ext, *y = (const char *)b + i * (size_t)ext;
        if (t->k == FLT || t->k == CPLX) {
            int parts = t->k == CPLX ? 2 : 1, fsize = t->k == CPLX ? t->size / 2 : t->size;
            for (int q = 0; q < parts; q++) {
                long double u, w;
                if (fsize == 4) { float f, g; memcpy(&f, x + q * 4, 4); memcpy(&g, y + q * 4, 4); u = f; w = g; }
                else if (fsize == 8) { double f, g; memcpy(&f, x + q * 8, 8); memcpy(&g, y + q * 8, 8); u = f; w = g; }
                else { memcpy(&u, x, sizeof u); memcpy(&w, y, sizeof w); }
                long double tol = op == MPI_PROD ? (fsize == 4 ? 1e-5L : 1e-12L) * fabsl(w) : 0;
                if (fabsl(u - w) > tol)
                    return 0;
            }
        } else if (t->k == PAIR) {
            int vi, wi;   /* the value part at offset 0, the int index after it (aligned) */
            size_t ioff = t->dt == MPI_2INT ? 4 : t->dt == MPI_SHORT_INT ? 4 : t->dt == MPI_FLOAT_INT ? 4 : 8;
            if (memcmp(x, y, (size_t)t->size))
                return 0;
            memcpy(&vi, x + ioff, 4);
            memcpy(&wi, y + ioff, 4);
            if (vi != wi)
                return 0;
        } else if (t->k == BOOL_) {
            if ((x[0] != 0) != (y[0] != 0))
                return 0;
        } else if (memcmp(x, y, (size_t)t->size)) {
            return 0;
        }
    }
    return 1;
}

/* failures are counted where they are seen (a rank prints what it saw); one agreement at the end */
static void report(int ok, MPI_Comm comm, const char *what, const tinfo *t, const char *op, size_t n, int root,
                   int inplace)
{
    (void)comm;
    checks++;
    if (!ok) {
        failures++;
        fprintf(stderr, "colltest: rank %d: FAILED %s %s %s count %zu root %d%s\n", me, what, t->name, op, n, root,
                inplace ? " in place" : "");
    }
}

static void check_reductions(MPI_Comm comm, const tinfo *t, const opinfo *o, size_t n)
{
    int p, r;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t->dt, &lb, &ext);
    size_t bytes = (n ? n : 1) * (size_t)ext;
    char *in = calloc(1, bytes), *out = calloc(1, bytes), *ref = calloc(1, bytes);
    if (!in || !out || !ref)
        MPI_Abort(MPI_COMM_WORLD, 3);
    fill(t, o->op, in, n, ext, r);
    /* allreduce, then in place */
    PMPI_Allreduce(in, ref, (int)n, t->dt, o->op, comm);
    MPI_Allreduce(in, out, (int)n, t->dt, o->op, comm);
    report(same(t, o->op, out, ref, n, ext), comm, "allreduce", t, o->name, n, -1, 0);
    memcpy(out, in, bytes);
    MPI_Allreduce(MPI_IN_PLACE, out, (int)n, t->dt, o->op, comm);
    report(same(t, o->op, out, ref, n, ext), comm, "allreduce", t, o->name, n, -1, 1);
    /* reduce to several roots, the last in place */
    int roots[3] = {0, p - 1, p / 2};
    for (int k = 0; k < 3; k++) {
        int root = roots[k], inplace = k == 2;
        memset(out, 0, bytes);
        PMPI_Reduce(in, ref, (int)n, t->dt, o->op, root, comm);
        if (inplace && r == root) {
            memcpy(out, in, bytes);
            MPI_Reduce(MPI_IN_PLACE, out, (int)n, t->dt, o->op, root, comm);
        } else {
            MPI_Reduce(in, out, (int)n, t->dt, o->op, root, comm);
        }
        report(r != root || same(t, o->op, out, ref, n, ext), comm, "reduce", t, o->name, n, root, inplace);
    }
    free(in);
    free(out);
    free(ref);
}

static void check_bcast(MPI_Comm comm, const tinfo *t, size_t n, int root)
{
    int r;
    MPI_Comm_rank(comm, &r);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t->dt, &lb, &ext);
    size_t bytes = (n ? n : 1) * (size_t)ext;
    char *buf = calloc(1, bytes), *want = calloc(1, bytes);
    if (!buf || !want)
        MPI_Abort(MPI_COMM_WORLD, 3);
    fill(t, MPI_SUM, want, n, ext, root);
    if (r == root)
        memcpy(buf, want, bytes);
    MPI_Bcast(buf, (int)n, t->dt, root, comm);
    report(same(t, MPI_SUM, buf, want, n, ext), comm, "bcast", t, "-", n, root, 0);
    free(buf);
    free(want);
}

static int quick;

static void suite(MPI_Comm comm, size_t large)
{
    int p;
    MPI_Comm_size(comm, &p);
    const size_t counts[] = {0, 1, 7, 1009};
    for (int ti = 0; ti < NTYPES; ti++)
        for (int oi = 0; oi < NOPS; oi++)
            /* quick: one type of each kind with its ops */
            if (valid(&TYPES[ti], OPS[oi].op) && (!quick || ti == 2 || ti == 7 || ti == 18 || ti == 21 || ti == 22 ||
                                                  ti == 23 || ti == 25))
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                    check_reductions(comm, &TYPES[ti], &OPS[oi], counts[c]);
    for (int ti = 0; ti < NTYPES; ti++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            check_bcast(comm, &TYPES[ti], counts[c], (int)(c % (size_t)p));
    /* large messages: a prime count of doubles (uneven ring blocks), ints, a byte broadcast */
    const tinfo *dbl = &TYPES[18], *i32 = &TYPES[2], *byte = &TYPES[23];
    const opinfo *sum = &OPS[0], *mx = &OPS[3];
    check_reductions(comm, dbl, sum, large | 1);
    check_reductions(comm, i32, mx, large);
    check_bcast(comm, byte, large * 8 + 3, p - 1);
    check_bcast(comm, dbl, large, 0);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    size_t large = argc > 1 ? (size_t)atol(argv[1]) : (size_t)1 << 21;
    quick = argc > 2 && !strcmp(argv[2], "quick");
    suite(MPI_COMM_WORLD, large);
    /* a sub-communicator: every other rank, in reversed order */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, wsize - me, &sub);
    suite(sub, large / 4);
    MPI_Comm_free(&sub);
    long mine[2] = {checks, failures}, all[2];
    PMPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("colltest: %ld checks, %ld failures\n", all[0], all[1]);
    MPI_Finalize();
    return all[1] ? 1 : 0;
}
