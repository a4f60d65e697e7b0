/* rankmap profiler: state shared by the core, the block writer and the lifecycle code.
 * Not part of the binding layer's interface (that is core.h). */
#ifndef RMP_STATE_H
#define RMP_STATE_H

#include "core.h"
#include <pthread.h>
#include <stddef.h>

/* An append-only byte buffer that a signal handler may read at any time:
 * growth copies into a new allocation and publishes it; the old one is kept
 * until exit, so a reader never sees freed memory. */
typedef struct {
    unsigned char *data;
    size_t len, cap;
} rmp_buf;

RMP_HIDDEN int rmp_buf_append(rmp_buf *b, const void *p, size_t n);

typedef struct {
    pthread_mutex_t lock; /* slow paths: groups, collective table, persistent requests */
    int comm_keyval, win_keyval, self_keyval;
    MPI_Group world_group;
    uint32_t *identity; /* 0..P-1, the world's translation table */
    rmp_buf groups;     /* serialized interned groups (section GROUPS) */
    rmp_buf coll;       /* rmp_coll_row[] (section COLL) */
    char *meta_json;    /* section META, built at start */
    size_t meta_len;
    int fd;             /* the run file, O_APPEND */
    uint64_t t_start_ns;
    uint32_t seq;
    int pid;
    rmp_p2p_row *rowbuf;   /* compaction buffer for section P2P: 2*P rows */
    int flushing;          /* a block is being written */
    int final_done;        /* the last block of this process is written */
    uint64_t snap_interval_ns; /* 0: no snapshots */
    uint64_t next_snap_ns;     /* a snapshot may be written from then on */
    pthread_mutex_t snap_lock;
} rmp_private;

RMP_HIDDEN extern rmp_private rmp_p;

#define RMP_LOCK() pthread_mutex_lock(&rmp_p.lock)
#define RMP_UNLOCK() pthread_mutex_unlock(&rmp_p.lock)

/* core.c */
RMP_HIDDEN int rmp_core_init(void);
RMP_HIDDEN uint32_t rmp_group_intern(const uint32_t *world, uint32_t n);

/* snapshot.c */
RMP_HIDDEN void rmp_snapshot_point(void); /* at collective entry: write a snapshot if one is due */
RMP_HIDDEN void rmp_snapshot_thread_start(void);

/* output.c */
RMP_HIDDEN int rmp_output_open(void);
RMP_HIDDEN void rmp_write_block(int status, int detail); /* async-signal-safe */
RMP_HIDDEN uint64_t rmp_now_ns(void);

#endif
