/* The profiler's hash tables (csrc/profiler/core.c), without an MPI job: the interned
 * groups, the persistent-request table (tombstones, growth) and the collective table.
 * core.c is included: the tables are static there. Nothing here calls into MPI: the
 * requests are made-up handles, the datatype size comes from the table the profiler
 * fills at start, and the communicator is MPI_COMM_WORLD (translated without a call). */
#include "../profiler/core.c"

#include "check.h"

#include <stdio.h>

/* the rest of the profiler, which core.c calls on paths these tests take */
void rmp_snapshot_point(void) {}
void rmp_start(void) {}
void rmp_keep_data_on_fatal_win_errors(MPI_Win win) { (void)win; }

/* ------------------------------------------------------------------ groups */

static size_t group_bytes(uint32_t n) { return 16 + 4 * (size_t)n + ((n & 1) ? 4 : 0); }

static void test_groups(void)
{
    enum { G = 3000 };
    static uint32_t ids[G];
    uint32_t w[64];
    size_t bytes = 0;
    for (uint32_t g = 0; g < G; g++) { /* group g: g % 7 + 1 ranks starting at g */
        uint32_t n = g % 7 + 1;
        for (uint32_t i = 0; i < n; i++)
            w[i] = g + i;
        ids[g] = rmp_group_intern(w, n);
        bytes += group_bytes(n);
    }
    int ok = 1;
    for (uint32_t g = 0; g < G; g++)
        ok = ok && ids[g] == g;
    CHECK(ok, "new groups get consecutive ids");
    CHECK(gtab_used == G && gtab_cap >= 2 * G && (gtab_cap & (gtab_cap - 1)) == 0, "table: %zu used, cap %zu",
          gtab_used, gtab_cap);
    CHECK(rmp_p.groups.len == bytes, "GROUPS section %zu bytes, expected %zu", rmp_p.groups.len, bytes);
    /* interning again finds every group after all the growth; nothing is added */
    ok = 1;
    for (uint32_t g = 0; g < G; g++) {
        uint32_t n = g % 7 + 1;
        for (uint32_t i = 0; i < n; i++)
            w[i] = g + i;
        ok = ok && rmp_group_intern(w, n) == g;
    }
    CHECK(ok, "an interned group is found again");
    CHECK(gtab_used == G && next_group_id == G && rmp_p.groups.len == bytes, "lookups added groups");
    /* same ranks, other order or size: other groups */
    uint32_t a[3] = {2, 3, 4}, b[3] = {4, 3, 2};
    CHECK(rmp_group_intern(a, 3) == 2, "{2,3,4} is group 2");
    CHECK(rmp_group_intern(b, 3) == G, "{4,3,2} is a new group");
    CHECK(rmp_group_intern(a, 2) == G + 1, "{2,3} is a new group");

    /* a full 64-bit hash collision: an entry with c's hash but other ranks sits first in
     * c's probe sequence; interning c must compare the ranks, not just the hashes */
    static const uint32_t other[3] = {9, 9, 9};
    uint32_t c[3] = {100001, 100002, 100003};
    group_ent fake = {hash_u32s(c, 3), 777777, 3, other};
    CHECK(gtab_insert(fake) == 0, "insert");
    uint32_t id = rmp_group_intern(c, 3);
    CHECK(id != 777777 && id == G + 2, "collision: c got id %u", id);
    CHECK(rmp_group_intern(c, 3) == id, "collision: c not found again");
}

/* ------------------------------------------------------------------ persistent requests */

enum { P = 64 };

static MPI_Request fake_request(uint64_t k)
{
    MPI_Request r;
    memset(&r, 0, sizeof r);
    memcpy(&r, &k, sizeof r < sizeof k ? sizeof r : sizeof k);
    return r;
}

/* keys whose slots agree on the low `bits` bits: they collide at every capacity up to 2^bits */
static int colliding_keys(uint64_t *keys, int want, int bits)
{
    const uint64_t mask = ((uint64_t)1 << bits) - 1, first = 0x10000;
    const size_t target = req_slot(req_key(fake_request(first))) & mask;
    int n = 0;
    for (uint64_t k = first; n < want && k < first + ((uint64_t)want << (bits + 6)); k += 16)
        if ((req_slot(req_key(fake_request(k))) & mask) == target)
            keys[n++] = k;
    return n;
}

static void test_persistent_requests(void)
{
    rmp_g.state = RMP_ACTIVE;
    rmp_g.size = P;
    rmp_g.sent = calloc(P, sizeof(rmp_cell));
    MPI_Datatype byte = MPI_BYTE;
    uint64_t bkey = rmp_handle_key(&byte, sizeof byte);
    rmp_types[rmp_type_hash(bkey)] = (rmp_type_slot){bkey, 1};

    /* many requests: every one counts its own peer and size after all the growth */
    enum { R = 20000 };
    for (uint64_t i = 0; i < R; i++)
        rmp_persist_init(fake_request(0x100000 + 64 * i), MPI_COMM_WORLD, (int)(i % P), 1 + i % 5, MPI_BYTE);
    CHECK(ptab_fill == R && ptab_cap >= 2 * R, "table: %zu filled, cap %zu", ptab_fill, ptab_cap);
    uint64_t want[P] = {0};
    for (uint64_t i = 0; i < R; i++) {
        rmp_persist_start(fake_request(0x100000 + 64 * i));
        want[i % P] += 1 + i % 5;
    }
    int ok = 1;
    for (int r = 0; r < P; r++)
        ok = ok && rmp_g.sent[r].bytes == want[r] && rmp_g.sent[r].msgs == R / P + (r < R % P);
    CHECK(ok, "per-peer counts after %d starts", R);
    /* re-initialising a request replaces its entry; unknown requests count nothing */
    rmp_persist_init(fake_request(0x100000), MPI_COMM_WORLD, 3, 1000, MPI_BYTE);
    CHECK(ptab_fill == R, "re-init added an entry");
    uint64_t before = rmp_g.sent[3].bytes;
    rmp_persist_start(fake_request(0x100000));
    rmp_persist_start(fake_request(0x7777777777));
    CHECK(rmp_g.sent[3].bytes == before + 1000 && rmp_g.sent[0].bytes == want[0], "re-init: %llu",
          (unsigned long long)(rmp_g.sent[3].bytes - before));
    /* a rank outside the world: unattributed, not lost */
    rmp_persist_init(fake_request(0x5555550), MPI_COMM_WORLD, P + 3, 8, MPI_BYTE);
    rmp_persist_start(fake_request(0x5555550));
    CHECK(rmp_g.unattr_bytes == 8 && rmp_g.unattr_msgs == 1, "unattributed %llu",
          (unsigned long long)rmp_g.unattr_bytes);
}

static void test_request_collisions(void)
{
    /* a fresh table */
    free(ptab);
    ptab = NULL, ptab_cap = ptab_fill = 0;
    memset(rmp_g.sent, 0, P * sizeof(rmp_cell));
    enum { K = 40 };
    uint64_t keys[K];
    int n = colliding_keys(keys, K, 12);
    CHECK(n == K, "found %d colliding keys", n);
    if (n != K)
        return;
    for (int i = 0; i < K; i++)
        rmp_persist_init(fake_request(keys[i]), MPI_COMM_WORLD, i % P, 1, MPI_BYTE);
    size_t s0 = req_slot(req_key(fake_request(keys[0]))) & (ptab_cap - 1);
    int chain = 1;
    for (size_t j = (s0 + 1) & (ptab_cap - 1); ptab[j].key; j = (j + 1) & (ptab_cap - 1))
        chain++;
    CHECK(chain >= K, "the keys do not share a probe sequence (%d)", chain);
    /* free every other one: tombstones in the middle of the probe sequence */
    for (int i = 0; i < K; i += 2)
        rmp_persist_forget(fake_request(keys[i]));
    for (int i = 0; i < K; i++)
        rmp_persist_start(fake_request(keys[i]));
    int ok = 1;
    for (int i = 0; i < K; i++)
        ok = ok && rmp_g.sent[i % P].msgs == (uint64_t)(i % 2);
    CHECK(ok, "live keys behind tombstones found, freed keys not counted");
    /* tombstones are reused, not piled up */
    size_t fill = ptab_fill;
    for (int i = 0; i < K; i += 2)
        rmp_persist_init(fake_request(keys[i]), MPI_COMM_WORLD, i % P, 1, MPI_BYTE);
    CHECK(ptab_fill == fill, "re-inserting freed keys: fill %zu -> %zu", fill, ptab_fill);
    /* growth drops the tombstones and keeps every live key */
    for (int i = 1; i < K; i += 4)
        rmp_persist_forget(fake_request(keys[i]));
    size_t cap = ptab_cap;
    for (uint64_t i = 0; i < 5000; i++)
        rmp_persist_init(fake_request(0x90000000 + 32 * i), MPI_COMM_WORLD, 0, 1, MPI_BYTE);
    CHECK(ptab_cap > cap && ptab_fill == K - K / 4 + 5000, "after growth: cap %zu, fill %zu", ptab_cap, ptab_fill);
    memset(rmp_g.sent, 0, P * sizeof(rmp_cell));
    for (int i = 0; i < K; i++)
        rmp_persist_start(fake_request(keys[i]));
    ok = 1;
    for (int i = 0; i < K; i++)
        ok = ok && rmp_g.sent[i % P].msgs == (uint64_t)(i % 4 != 1);
    CHECK(ok, "keys after growth");
}

/* ------------------------------------------------------------------ collectives */

static void test_collective_table(void)
{
    /* (group, op, root, size bucket) rows: every call of a row adds to it */
    enum { NG = 300, NOP = 6, NR = 3 };
    static const uint64_t sizes[] = {0, 1, 5, 7, 1000, 1023, 1 << 20, (1ull << 40) + 3};
    /* buckets: 0 | 1 | 3 3 | 10 10 | 21 | 41 -> 6 per (group, op, root) */
    uint64_t total = 0;
    for (int rep = 0; rep < 2; rep++)
        for (uint32_t g = 0; g < NG; g++)
            for (int op = 0; op < NOP; op++)
                for (int root = -1; root < NR - 1; root++)
                    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
                        coll_record(g, op, root, sizes[s]);
                        total += sizes[s];
                    }
    size_t nrows = rmp_p.coll.len / sizeof(rmp_coll_row);
    CHECK(nrows == (size_t)NG * NOP * NR * 6, "%zu rows, expected %d", nrows, NG * NOP * NR * 6);
    CHECK(ctab_cap >= 2 * nrows, "index cap %zu for %zu rows", ctab_cap, nrows);
    const rmp_coll_row *rows = (const rmp_coll_row *)rmp_p.coll.data;
    uint64_t calls = 0, bytes = 0;
    int ok = 1;
    for (size_t r = 0; r < nrows; r++) {
        calls += rows[r].calls;
        bytes += rows[r].bytes;
        int two = rows[r].bucket == 3 || rows[r].bucket == 10; /* two sizes share these buckets */
        ok = ok && rows[r].calls == (two ? 4u : 2u);
        ok = ok && rows[r].group < NG && rows[r].op < NOP && rows[r].root >= -1 && rows[r].root < NR - 1;
    }
    CHECK(ok, "calls per row");
    CHECK(calls == 2ull * NG * NOP * NR * 8 && bytes == total, "calls %llu bytes %llu", (unsigned long long)calls,
          (unsigned long long)bytes);
    /* every row is unique */
    ok = 1;
    for (size_t r = 1; r < nrows && ok; r++)
        for (size_t q = r > 40 ? r - 40 : 0; q < r; q++)
            ok = ok && !(rows[q].group == rows[r].group && rows[q].op == rows[r].op && rows[q].root == rows[r].root &&
                         rows[q].bucket == rows[r].bucket);
    CHECK(ok, "duplicate rows");
}

int main(void)
{
    test_groups();
    test_persistent_requests();
    test_request_collisions();
    test_collective_table();
    return rm_report("profiler_tables");
}
