/* rankmap profiler: writes one rank's block into the run file.
 *
 * Every rank appends self-describing blocks (docs/formats.md) to ONE file with a
 * single writev() on an O_APPEND descriptor: no gather (a rank that died cannot
 * deadlock the others), no file per rank, and the same code path for
 * MPI_Finalize, MPI_Abort, exit without finalize, a fatal signal and periodic
 * snapshots. rmp_write_block() only computes and makes system calls, so it is
 * safe in a signal handler. */
#define _GNU_SOURCE
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MASK_WORDS 64 /* 4096 CPUs */

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *s = p;
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *s++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

uint64_t rmp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void errline(const char *a, const char *b)
{
    /* write(2) only: this may run in a signal handler */
    if (write(2, a, strlen(a)) < 0 || (b && write(2, b, strlen(b)) < 0) || write(2, "\n", 1) < 0)
        return;
}

int rmp_output_open(void)
{
    crc_init();
    const char *dir = getenv("RANKMAP_PROFILE_DIR");
    const char *run = getenv("RANKMAP_PROFILE_RUN_ID");
    char *derived = NULL;
    if (dir == NULL || !*dir)
        dir = "rankmap-profile";
    if (run == NULL || !*run) {
        /* not launched by `rankmap profile`: every rank of one launch shares these */
        const char *ns = getenv("PMIX_NAMESPACE");
        const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
        if (ns && *ns)
            run = ns;
        else if (job && step && asprintf(&derived, "slurm-%s.%s", job, step) > 0)
            run = derived;
        else
            run = "unnamed";
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        if (rmp_g.rank == 0)
            fprintf(stderr, "rankmap profiler: cannot create %s: %s; no profile is recorded\n", dir, strerror(errno));
        free(derived);
        return -1;
    }
    char *path = NULL;
    /* a run id keeps runs apart: an earlier run's file is never appended to by a new launch
     * that `rankmap profile` started (it sets a fresh RANKMAP_PROFILE_RUN_ID) */
    size_t n = strlen(dir) + strlen(run) + 32;
    path = malloc(n);
    if (path == NULL) {
        free(derived);
        return -1;
    }
    snprintf(path, n, "%s/ranks.%s.rmp", dir, run);
    for (char *c = path + strlen(dir) + 1; *c; c++) /* the run id must not escape the directory */
        if (*c == '/')
            *c = '_';
    rmp_p.fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (rmp_p.fd < 0 && rmp_g.rank == 0)
        fprintf(stderr, "rankmap profiler: cannot open %s: %s; no profile is recorded\n", path, strerror(errno));
    free(path);
    free(derived);
    return rmp_p.fd < 0 ? -1 : 0;
}

static size_t compact_p2p(rmp_p2p_row *out)
{
    /* sends of this rank, then gets attributed to their target */
    size_t n = 0;
    uint32_t me = (uint32_t)rmp_g.rank;
    for (int pass = 0; pass < 2; pass++) {
        const rmp_cell *row = pass ? rmp_g.got : rmp_g.sent;
        for (int j = 0; j < rmp_g.size; j++) {
            uint64_t b = __atomic_load_n(&row[j].bytes, __ATOMIC_RELAXED);
            uint64_t m = __atomic_load_n(&row[j].msgs, __ATOMIC_RELAXED);
            if (!m)
                continue;
            uint32_t src = pass ? (uint32_t)j : me, dst = pass ? me : (uint32_t)j;
            out[n++] = (rmp_p2p_row){src, dst, b, m};
        }
    }
    return n;
}

void rmp_write_block(int status, int detail)
{
    if (rmp_p.fd < 0 || getpid() != rmp_p.pid) /* a forked child inherits our handlers: not our data */
        return;
    /* one writer at a time (they share the compaction buffer). A snapshot in progress
     * elsewhere is waited for, up to 1 s: the final block must not be lost to it, and if
     * this signal handler interrupted that very snapshot, waiting longer would deadlock. */
    for (int tries = 0; __atomic_exchange_n(&rmp_p.flushing, 1, __ATOMIC_ACQ_REL); tries++) {
        if (status == RMP_ST_RUNNING || tries >= 1000)
            return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    rmp_g.dirty = 0;

    rmp_end_fixed ef = {0};
    /* the kernel's mask is an array of unsigned longs: read it in place, no allocation */
    uint64_t mask[MASK_WORDS] = {0};
    if (sched_getaffinity(0, sizeof mask, (cpu_set_t *)(void *)mask) != 0)
        memset(mask, 0, sizeof mask);
    unsigned cpu = 0, node = 0;
    ef.cpu_end = getcpu(&cpu, &node) == 0 ? (int32_t)cpu : -1;
    ef.numa_end = ef.cpu_end >= 0 ? (int32_t)node : -1;
    ef.t_start = rmp_p.t_start_ns;
    ef.t_end = rmp_now_ns();
    ef.unattr_bytes = rmp_g.unattr_bytes;
    ef.unattr_msgs = rmp_g.unattr_msgs;
    ef.inter_coll = rmp_g.inter_coll;
    /* the mask up to its highest CPU: one word on machines of up to 64 CPUs, not 4096 CPUs' 512 bytes */
    uint32_t words = MASK_WORDS;
    while (words > 1 && mask[words - 1] == 0)
        words--;
    ef.aff_words = words;

    size_t nrows = compact_p2p(rmp_p.rowbuf);
    /* buffers may grow concurrently: read length first, then the (newer or equal) data pointer */
    size_t glen = __atomic_load_n(&rmp_p.groups.len, __ATOMIC_ACQUIRE);
    const unsigned char *gdat = __atomic_load_n(&rmp_p.groups.data, __ATOMIC_ACQUIRE);
    size_t clen = __atomic_load_n(&rmp_p.coll.len, __ATOMIC_ACQUIRE);
    const unsigned char *cdat = __atomic_load_n(&rmp_p.coll.data, __ATOMIC_ACQUIRE);

    static const unsigned char zeros[8];
    struct {
        const void *p;
        size_t n;
        uint32_t type, item;
    } sec[5] = {
        {rmp_p.meta_json, rmp_p.meta_len, RMP_SEC_META, 1},
        {NULL, 0, RMP_SEC_END, 0},
        {rmp_p.rowbuf, nrows * sizeof(rmp_p2p_row), RMP_SEC_P2P, sizeof(rmp_p2p_row)},
        {gdat, glen, RMP_SEC_GROUPS, 0},
        {cdat, clen, RMP_SEC_COLL, sizeof(rmp_coll_row)},
    };
    rmp_section_header sh[5];
    struct iovec iov[1 + 5 * 4];
    int k = 1;
    uint32_t crc = 0;
    uint64_t payload = 0;
    for (int s = 0; s < 5; s++) {
        size_t n = sec[s].type == RMP_SEC_END ? sizeof ef + 8 * (size_t)words : sec[s].n;
        sh[s] = (rmp_section_header){sec[s].type, sec[s].item, n};
        iov[k++] = (struct iovec){&sh[s], sizeof sh[s]};
        if (sec[s].type == RMP_SEC_END) {
            iov[k++] = (struct iovec){&ef, sizeof ef};
            iov[k++] = (struct iovec){mask, 8 * (size_t)words};
        } else if (n) {
            iov[k++] = (struct iovec){(void *)sec[s].p, n};
        }
        if (n % 8)
            iov[k++] = (struct iovec){(void *)zeros, 8 - n % 8};
    }
    for (int i = 1; i < k; i++) {
        crc = crc_update(crc, iov[i].iov_base, iov[i].iov_len);
        payload += iov[i].iov_len;
    }
    rmp_block_header h = {RMP_MAGIC, RMP_FORMAT_VERSION, sizeof(rmp_block_header), payload, crc,
                      (uint32_t)rmp_g.rank, (uint32_t)rmp_g.size, (uint32_t)status, detail, rmp_p.seq++,
                      (uint32_t)rmp_p.pid, 5, 0};
    iov[0] = (struct iovec){&h, sizeof h};
    ssize_t want = (ssize_t)(sizeof h + payload);
    ssize_t got = writev(rmp_p.fd, iov, k);
    if (got != want)
        errline("rankmap profiler: could not write this rank's profile block: ", got < 0 ? strerror(errno) : "short write");
    __atomic_store_n(&rmp_p.flushing, 0, __ATOMIC_RELEASE);
}
