/* rankmap profiler: start, finalize, abort, crash and exit handling.
 *
 * Start is lazy (the first intercepted call after MPI is initialized) because
 * some bindings (Open MPI Fortran, MPICH mpi_f08) call PMPI_Init directly.
 * Finalize is caught by a delete callback on MPI_COMM_SELF, which MPI_Finalize
 * runs first whatever binding called it. Abort, fatal signals and exit without
 * MPI_Finalize each write this rank's block marked partial. */
#define _GNU_SOURCE
#include "state.h"

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define RMP_VERSION "0.1.0"
/* what a count means; docs/formats.md spells out "rankmap-1" */
#define RMP_RULES "rankmap-1"

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ metadata JSON */

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *p, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (s == NULL) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void sb_str(sbuf *b, const char *p) { sb_put(b, p, strlen(p)); }

static void sb_json_string(sbuf *b, const char *p)
{
    sb_put(b, "\"", 1);
    for (; p && *p; p++) {
        unsigned char c = (unsigned char)*p;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            sb_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            sb_put(b, esc, 6);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static void sb_kv_str(sbuf *b, const char *k, const char *v)
{
    sb_put(b, ",", 1);
    sb_json_string(b, k);
    sb_put(b, ":", 1);
    if (v)
        sb_json_string(b, v);
    else
        sb_str(b, "null");
}

static void sb_kv_int(sbuf *b, const char *k, long long v)
{
    char num[32];
    sb_put(b, ",", 1);
    sb_json_string(b, k);
    snprintf(num, sizeof num, ":%lld", v);
    sb_str(b, num);
}

static void cpu_list(sbuf *b)
{
    /* "0-3,8" from the affinity mask */
    uint64_t mask[64] = {0};
    if (sched_getaffinity(0, sizeof mask, (cpu_set_t *)(void *)mask) != 0) {
        sb_str(b, "null");
        return;
    }
    sbuf l = {0};
    int first = 1;
    for (int c = 0; c < 64 * 64; c++) {
        if (!(mask[c / 64] >> (c % 64) & 1))
            continue;
        int e = c;
        while (e + 1 < 64 * 64 && (mask[(e + 1) / 64] >> ((e + 1) % 64) & 1))
            e++;
        char part[32];
        snprintf(part, sizeof part, e > c ? "%s%d-%d" : "%s%d", first ? "" : ",", c, e);
        sb_str(&l, part);
        first = 0;
        c = e;
    }
    sb_json_string(b, l.s ? l.s : "");
    free(l.s);
}

static const char *thread_level_name(int t)
{
    switch (t) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "unknown";
}

static int build_meta(int provided)
{
    sbuf b = {0};
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "", pname[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int len = 0, ver = 0, sub = 0;
    PMPI_Get_library_version(lib, &len);
    PMPI_Get_processor_name(pname, &len);
    PMPI_Get_version(&ver, &sub);
    long hmax = sysconf(_SC_HOST_NAME_MAX);
    char *host = calloc((size_t)(hmax > 0 ? hmax : 255) + 2, 1);
    if (host)
        gethostname(host, (size_t)(hmax > 0 ? hmax : 255) + 1);
    unsigned cpu = 0, node = 0;
    int have_cpu = getcpu(&cpu, &node) == 0;
    char mpiver[32];
    snprintf(mpiver, sizeof mpiver, "%d.%d", ver, sub);
    const char *run = getenv("RANKMAP_PROFILE_RUN_ID");

    sb_str(&b, "{\"format\":\"rankmap-profile\"");
    sb_kv_int(&b, "format_version", 1);
    sb_kv_str(&b, "profiler_version", RMP_VERSION);
    sb_kv_str(&b, "counting_rules", RMP_RULES);
    sb_kv_str(&b, "run_id", run);
    sb_kv_int(&b, "world_rank", rmp_g.rank);
    sb_kv_int(&b, "world_size", rmp_g.size);
    sb_kv_str(&b, "hostname", host);
    sb_kv_str(&b, "processor_name", pname);
    sb_kv_int(&b, "pid", rmp_p.pid);
    sb_str(&b, ",\"affinity_init\":");
    cpu_list(&b);
    sb_kv_int(&b, "cpu_init", have_cpu ? (long long)cpu : -1);
    sb_kv_int(&b, "numa_init", have_cpu ? (long long)node : -1);
    /* the library's full description (MPICH's runs to 2.4 kB: its configure line) once, from
     * rank 0; the other ranks keep its first line, which names the library and version:
     * at 10^5 ranks the full text in every block would be most of the run file */
    if (rmp_g.rank != 0)
        lib[strcspn(lib, "\n")] = '\0';
    sb_kv_str(&b, "mpi_library", lib);
    sb_kv_str(&b, "mpi_version", mpiver);
#ifdef OPEN_MPI
    sb_kv_str(&b, "mpi_implementation", "Open MPI");
#elif defined(MPICH)
    sb_kv_str(&b, "mpi_implementation", "MPICH");
#else
    sb_kv_str(&b, "mpi_implementation", "other");
#endif
    sb_kv_str(&b, "thread_level", thread_level_name(provided));
    sb_kv_int(&b, "start_time_ns", (long long)rmp_p.t_start_ns);
    sb_str(&b, ",\"env\":{");
    static const char *vars[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURMD_NODENAME",
                                 "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMIX_RANK",
                                 "PMIX_NAMESPACE"};
    int first = 1;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (!v)
            continue;
        if (!first)
            sb_put(&b, ",", 1);
        sb_json_string(&b, vars[i]);
        sb_put(&b, ":", 1);
        sb_json_string(&b, v);
        first = 0;
    }
    sb_str(&b, "}}");
    free(host);
    if (b.oom) {
        free(b.s);
        return -1;
    }
    rmp_p.meta_json = b.s;
    rmp_p.meta_len = b.len;
    return 0;
}

/* ------------------------------------------------------------------ the last block */

static void rmp_final(int status, int detail)
{
    if (rmp_g.state != RMP_ACTIVE)
        return;
    if (__atomic_exchange_n(&rmp_p.final_done, 1, __ATOMIC_ACQ_REL))
        return;
    rmp_write_block(status, detail);
    rmp_g.state = RMP_DONE;
}

static int self_delete_cb(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm, (void)keyval, (void)val, (void)extra;
    rmp_final(RMP_ST_FINALIZED, 0);
    return MPI_SUCCESS;
}

void rmp_abort_hook(int code)
{
    RMP_ENTER();
    rmp_final(RMP_ST_ABORTED, code);
}

static void on_exit_hook(void)
{
    if (getpid() == rmp_p.pid)
        rmp_final(RMP_ST_EXIT, 0);
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGXCPU};
#define NSIG_FATAL (sizeof fatal_signals / sizeof *fatal_signals)
static struct sigaction old_actions[NSIG_FATAL];

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)si, (void)uc;
    rmp_final(RMP_ST_SIGNAL, sig);
    /* hand the signal to whoever had it before (Open MPI's backtrace printer, the default action) */
    for (size_t i = 0; i < NSIG_FATAL; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &old_actions[i], NULL);
    raise(sig); /* blocked while we run: delivered under the old action when we return */
}

static void install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSIG_FATAL; i++) {
        if (sigaction(fatal_signals[i], NULL, &old_actions[i]) != 0)
            continue;
        if (!(old_actions[i].sa_flags & SA_SIGINFO) && old_actions[i].sa_handler == SIG_IGN)
            continue; /* the program chose to ignore it */
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

/* MPI_ERRORS_ARE_FATAL, the default handler of MPI_COMM_WORLD and MPI_COMM_SELF (and so of
 * every communicator made from them), ends the process without atexit handlers under Open MPI:
 * a rank that died of an MPI error (a send to a rank that does not exist) lost its data. The
 * profiler's handler writes the final block, says what happened and aborts as the default
 * does. A program that sets its own handler replaces this one. */
static MPI_Errhandler fatal_eh = MPI_ERRHANDLER_NULL;

static void on_mpi_error(MPI_Comm *comm, int *code, ...)
{
    char text[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (PMPI_Error_string(*code, text, &len) != MPI_SUCCESS || len <= 0)
        snprintf(text, sizeof text, "error code %d", *code);
    text[len > 0 && len <= MPI_MAX_ERROR_STRING ? len : (int)strlen(text)] = 0;
    fprintf(stderr, "rankmap profiler: rank %d: an MPI call failed (%s) under MPI_ERRORS_ARE_FATAL; the profile "
                    "is written, the program aborts\n", rmp_g.rank, text);
    rmp_final(RMP_ST_ABORTED, *code);
    PMPI_Abort(*comm, *code);
}

static void keep_data_on_fatal_errors(MPI_Comm comm)
{
    MPI_Errhandler cur;
    if (PMPI_Comm_get_errhandler(comm, &cur) != MPI_SUCCESS || cur != MPI_ERRORS_ARE_FATAL)
        return;
    if (fatal_eh == MPI_ERRHANDLER_NULL && PMPI_Comm_create_errhandler(on_mpi_error, &fatal_eh) != MPI_SUCCESS) {
        fatal_eh = MPI_ERRHANDLER_NULL;
        return;
    }
    PMPI_Comm_set_errhandler(comm, fatal_eh);
}

/* ------------------------------------------------------------------ start */

void rmp_start(void)
{
    pthread_mutex_lock(&start_lock);
    if (rmp_g.state != RMP_IDLE)
        goto out;
    int init = 0, fin = 0, provided = MPI_THREAD_SINGLE;
    PMPI_Initialized(&init);
    if (!init)
        goto out; /* before MPI_Init: nothing to attribute yet */
    PMPI_Finalized(&fin);
    if (fin) {
        rmp_g.state = RMP_DONE;
        goto out;
    }
    const char *off = getenv("RANKMAP_PROFILE");
    /* off as RANKMAP_COLL=off says it too: only "0" did, and "off", "no" or "false" profiled
     * the run without a word */
    if (off &&
        (!strcmp(off, "0") || !strcasecmp(off, "off") || !strcasecmp(off, "no") || !strcasecmp(off, "false"))) {
        rmp_g.state = RMP_DONE;
        goto out;
    }
    if (off && *off && strcmp(off, "1") && strcasecmp(off, "on") && strcasecmp(off, "yes") && strcasecmp(off, "true")) {
        int r = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &r);
        if (r == 0)
            fprintf(stderr, "rankmap profiler: RANKMAP_PROFILE=%s is neither 0/off (no profile) nor 1/on; "
                    "profiling\n", off);
    }
    MPI_Comm parent = MPI_COMM_NULL;
    if (PMPI_Comm_get_parent(&parent) == MPI_SUCCESS && parent != MPI_COMM_NULL) {
        /* spawned by MPI_Comm_spawn: another MPI_COMM_WORLD, whose blocks in the parent run's
         * file made the whole run unreadable ("the file mixes different runs"); the parents
         * count their traffic to it as unattributed */
        rmp_g.state = RMP_DONE;
        goto out;
    }
    PMPI_Query_thread(&provided);
    rmp_g.multi = provided == MPI_THREAD_MULTIPLE;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rmp_g.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &rmp_g.size);
    rmp_p.pid = (int)getpid();
    rmp_p.t_start_ns = rmp_now_ns();
    const char *iv = getenv("RANKMAP_PROFILE_FLUSH_SECONDS");
    double secs = 1.0;
    if (iv && *iv) {
        /* a whole value or nothing: atof read "abc" as 0 (snapshots silently off) and "2s" as 2 */
        char *end = NULL;
        double v = strtod(iv, &end);
        while (end && (*end == ' ' || *end == '\t'))
            end++;
        if (end == iv || !end || *end || v != v || v < 0) {
            /* (a negative value turned snapshots off without a word: 0 is the off) */
            if (rmp_g.rank == 0)
                fprintf(stderr, "rankmap profiler: RANKMAP_PROFILE_FLUSH_SECONDS=%s is not a number of seconds "
                        "(0 or more); snapshots every 1 s (0 turns them off)\n", iv);
        } else {
            secs = v;
        }
    }
    /* 0 (or not a positive number) means no snapshots; anything positive means some: below
     * 1 ns it truncated to 0 (none), past 2^64 ns the cast was undefined */
    rmp_p.snap_interval_ns = !(secs > 0) ? 0 : secs >= 1.8e10 ? (uint64_t)1.8e19 : secs * 1e9 < 1 ? 1 : (uint64_t)(secs * 1e9);
    rmp_p.next_snap_ns = 0; /* the first snapshot is due as soon as there is traffic */
    if (rmp_core_init() != 0 || build_meta(provided) != 0) {
        if (rmp_g.rank == 0)
            fprintf(stderr, "rankmap profiler: out of memory at start; no profile is recorded\n");
        rmp_g.state = RMP_DONE;
        goto out;
    }
    if (rmp_output_open() != 0) {
        rmp_g.state = RMP_DONE;
        goto out;
    }
    int kv;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_cb, &kv, NULL) == MPI_SUCCESS) {
        rmp_p.self_keyval = kv;
        PMPI_Comm_set_attr(MPI_COMM_SELF, kv, NULL);
    }
    install_signal_handlers();
    keep_data_on_fatal_errors(MPI_COMM_WORLD);
    keep_data_on_fatal_errors(MPI_COMM_SELF);
    atexit(on_exit_hook);
    __atomic_store_n(&rmp_g.state, RMP_ACTIVE, __ATOMIC_RELEASE);
    if (rmp_p.snap_interval_ns)
        rmp_snapshot_thread_start();
out:
    pthread_mutex_unlock(&start_lock);
}

/* ------------------------------------------------------------------ C lifecycle entry points */

RMP_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        rmp_start();
    return rc;
}

RMP_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        rmp_start();
    return rc;
}

/* Windows have their own default handler, MPI_ERRORS_ARE_FATAL, not inherited from their
 * communicator: the profiler's is put in its place when it first sees a window (its first
 * one-sided call, before the call runs). */
static MPI_Errhandler fatal_win_eh = MPI_ERRHANDLER_NULL;

static void on_mpi_win_error(MPI_Win *win, int *code, ...)
{
    (void)win;
    MPI_Comm world = MPI_COMM_WORLD;
    on_mpi_error(&world, code);
}

void rmp_keep_data_on_fatal_win_errors(MPI_Win win)
{
    MPI_Errhandler cur;
    if (PMPI_Win_get_errhandler(win, &cur) != MPI_SUCCESS || cur != MPI_ERRORS_ARE_FATAL)
        return;
    if (fatal_win_eh == MPI_ERRHANDLER_NULL &&
        PMPI_Win_create_errhandler(on_mpi_win_error, &fatal_win_eh) != MPI_SUCCESS) {
        fatal_win_eh = MPI_ERRHANDLER_NULL;
        return;
    }
    PMPI_Win_set_errhandler(win, fatal_win_eh);
}

RMP_EXPORT int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    int rc = PMPI_Win_get_errhandler(win, errhandler);
    if (rc == MPI_SUCCESS && fatal_win_eh != MPI_ERRHANDLER_NULL && *errhandler == fatal_win_eh)
        *errhandler = MPI_ERRORS_ARE_FATAL;
    return rc;
}

RMP_EXPORT int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    if (errhandler == MPI_ERRORS_ARE_FATAL && fatal_win_eh != MPI_ERRHANDLER_NULL)
        errhandler = fatal_win_eh;
    return PMPI_Win_set_errhandler(win, errhandler);
}

/* The program sees the handlers it set: the profiler's stands for MPI_ERRORS_ARE_FATAL both ways */
RMP_EXPORT int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    int rc = PMPI_Comm_get_errhandler(comm, errhandler);
    if (rc == MPI_SUCCESS && fatal_eh != MPI_ERRHANDLER_NULL && *errhandler == fatal_eh)
        *errhandler = MPI_ERRORS_ARE_FATAL;
    return rc;
}

RMP_EXPORT int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    if (errhandler == MPI_ERRORS_ARE_FATAL && fatal_eh != MPI_ERRHANDLER_NULL)
        errhandler = fatal_eh;
    return PMPI_Comm_set_errhandler(comm, errhandler);
}

RMP_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode)
{
    rmp_abort_hook(errorcode);
    return PMPI_Abort(comm, errorcode);
}
