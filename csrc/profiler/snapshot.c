/* rankmap profiler: periodic snapshots of a running rank.
 * A rank killed by SIGKILL (MPICH's Hydra does that to the other ranks on MPI_Abort or a
 * crash; so does the OOM killer) runs no handler: only what is already written survives.
 * Snapshots are written when the counters changed: at the first collective entered after
 * traffic (the "exchange, then block, then die" pattern), then at most once per interval,
 * the interval doubling each time (1 s, 2 s, 4 s, ...: about log2(T) blocks for a run of T s).
 * A background thread covers ranks that block for long without entering a collective.
 * (The core calls rmp_snapshot_point; lifecycle.c starts the thread; both call down to here.) */
#define _GNU_SOURCE
#include "state.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static void snapshot_if_due(void)
{
    if (rmp_g.state != RMP_ACTIVE || !rmp_g.dirty)
        return;
    uint64_t now = rmp_now_ns();
    if (now < __atomic_load_n(&rmp_p.next_snap_ns, __ATOMIC_RELAXED))
        return;
    if (pthread_mutex_trylock(&rmp_p.snap_lock) != 0)
        return;
    if (now >= rmp_p.next_snap_ns) {
        uint64_t gap = now - rmp_p.t_start_ns;
        if (gap < rmp_p.snap_interval_ns)
            gap = rmp_p.snap_interval_ns;
        __atomic_store_n(&rmp_p.next_snap_ns, now + gap, __ATOMIC_RELAXED);
        rmp_write_block(RMP_ST_RUNNING, 0);
    }
    pthread_mutex_unlock(&rmp_p.snap_lock);
}

void rmp_snapshot_point(void)
{
    if (RMP_UNLIKELY(rmp_g.dirty) && rmp_p.snap_interval_ns)
        snapshot_if_due();
}

static void *snapshot_thread(void *arg)
{
    (void)arg;
    while (rmp_g.state == RMP_ACTIVE) {
        uint64_t now = rmp_now_ns(), next = __atomic_load_n(&rmp_p.next_snap_ns, __ATOMIC_RELAXED);
        uint64_t wait = next > now ? next - now : rmp_p.snap_interval_ns;
        struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
        nanosleep(&ts, NULL);
        snapshot_if_due();
    }
    return NULL;
}

void rmp_snapshot_thread_start(void)
{
    /* the thread takes no signal: fatal and termination signals go to the program's threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    if (pthread_create(&th, &attr, snapshot_thread, NULL) != 0 && rmp_g.rank == 0)
        fprintf(stderr, "rankmap profiler: no snapshot thread; a rank killed by SIGKILL loses its data\n");
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

