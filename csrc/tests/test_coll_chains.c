/* The collective kernels' chain layouts (csrc/coll/kernels.c): how the k-chain reduce
 * splits the m non-root members. Pure functions: no MPI job. */
#include "check.h"
#include "coll.h"

#define MAXM 200

static int sum(const int *l, int k)
{
    int s = 0;
    for (int j = 0; j < k; j++)
        s += l[j];
    return s;
}

static void test_fixed(void)
{
    int l[MAXM + 1];
    CHECK(rm_chains_fixed(0, 3, l) == 0, "no members, no chains");
    CHECK(rm_chains_fixed(-2, 3, l) == 0, "negative members");
    int k = rm_chains_fixed(10, 3, l);
    CHECK(k == 3 && l[0] == 3 && l[1] == 3 && l[2] == 4, "10 in 3: %d chains %d %d %d", k, l[0], l[1], l[2]);
    k = rm_chains_fixed(11, 3, l);
    CHECK(k == 3 && l[0] == 3 && l[1] == 4 && l[2] == 4, "11 in 3: %d %d %d", l[0], l[1], l[2]);
    k = rm_chains_fixed(5, 1, l);
    CHECK(k == 1 && l[0] == 5, "one chain");
    k = rm_chains_fixed(5, 0, l);
    CHECK(k == 1 && l[0] == 5, "k < 1 is one chain");
    k = rm_chains_fixed(3, 8, l);
    CHECK(k == 3 && l[0] == 1 && l[1] == 1 && l[2] == 1, "more chains than members: %d", k);
    /* every m, k: k' = min(max(k,1),m) chains, lengths sum to m, differ by at most one,
     * never decrease (the shorter chains first: the root receives them first) */
    for (int m = 1; m <= MAXM; m++)
        for (int kk = -1; kk <= m + 2; kk++) {
            int want = kk < 1 ? 1 : kk > m ? m : kk;
            k = rm_chains_fixed(m, kk, l);
            int ok = k == want && sum(l, k) == m && l[k - 1] - l[0] <= 1;
            for (int j = 1; j < k; j++)
                ok = ok && l[j] >= l[j - 1] && l[j] >= 1;
            if (!ok) {
                CHECK(ok, "fixed m=%d k=%d: %d chains", m, kk, k);
                return;
            }
        }
}

static void test_adaptive(void)
{
    int l[MAXM + 1];
    CHECK(rm_chains_adaptive(0, l) == 0, "no members, no chains");
    int k = rm_chains_adaptive(1, l);
    CHECK(k == 1 && l[0] == 1, "one member");
    k = rm_chains_adaptive(6, l);
    CHECK(k == 3 && l[0] == 1 && l[1] == 2 && l[2] == 3, "6 = 1+2+3: %d chains", k);
    k = rm_chains_adaptive(8, l);
    CHECK(k == 4 && l[0] == 1 && l[1] == 2 && l[2] == 3 && l[3] == 2, "8 = 1+2+3 then 2: %d chains", k);
    k = rm_chains_adaptive(15, l); /* P = 16: 1+2+3+4+5 */
    CHECK(k == 5 && l[4] == 5, "15 = 1+..+5: %d chains", k);
    /* every m: chains 1, 2, ..., t (the largest triangle number <= m), then the rest */
    for (int m = 1; m <= MAXM; m++) {
        k = rm_chains_adaptive(m, l);
        int t = 0;
        while ((t + 1) * (t + 2) / 2 <= m)
            t++;
        int rest = m - t * (t + 1) / 2;
        int ok = sum(l, k) == m && k == t + (rest > 0);
        for (int j = 0; j < t && ok; j++)
            ok = l[j] == j + 1;
        if (ok && rest)
            ok = l[t] == rest && rest <= t;
        if (!ok) {
            CHECK(ok, "adaptive m=%d: %d chains", m, k);
            return;
        }
    }
}

int main(void)
{
    test_fixed();
    test_adaptive();
    return rm_report("coll_chains");
}
