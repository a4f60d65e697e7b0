/* rankmap's collective kernels: internal interface.
 *
 * Every kernel works on "positions": 0..p-1 along the physical order of the ranks (one
 * node's ranks contiguous, nodes neighbour to neighbour), given by a topology object
 * (topo.c). Only named (predefined) datatypes and commutative ops reach a kernel; the
 * interposition layer (interpose.c) sends everything else to the MPI library unchanged. */
#ifndef RANKMAP_COLL_H
#define RANKMAP_COLL_H

#include <mpi.h>
#include <stddef.h>

#define RM_MAXDIMS 8

typedef struct {
    int p;                  /* communicator size */
    int *order;             /* position -> communicator rank */
    int *pos;               /* communicator rank -> position */
    int ndims;              /* grid for the d-D ring: dims[0] fastest (ranks of one node) */
    int dims[RM_MAXDIMS];
    char source[32];        /* where the order came from: "file", "grid", "nodes" */
    MPI_Comm inner;         /* a private duplicate: the kernels' messages never meet the program's */
} rm_topo;

typedef struct {
    MPI_Comm comm;
    const rm_topo *t;
    int me;                 /* my position */
    MPI_Datatype dt;
    MPI_Aint ext;           /* extent of one element */
    MPI_Op op;
    size_t packet;          /* elements per packet of the pipelined steps */
} rm_ctx;

/* errors: every kernel returns an MPI error code (MPI_SUCCESS when fine) */
int rm_allreduce_ring(rm_ctx *c, void *buf, size_t count, int ndims, const int *dims);
int rm_allreduce_recdbl(rm_ctx *c, void *buf, size_t count);
int rm_reduce_rsg(rm_ctx *c, const void *sendbuf, void *recvbuf, size_t count, int root, int nd, const int *dims);
int rm_reduce_binomial(rm_ctx *c, const void *sendbuf, void *recvbuf, size_t count, int root);
int rm_reduce_chains(rm_ctx *c, const void *sendbuf, void *recvbuf, size_t count, int root,
                     int nchains, const int *lengths);
int rm_bcast_chain(rm_ctx *c, void *buf, size_t count, int root, size_t segment);
int rm_bcast_scatter_allgather(rm_ctx *c, void *buf, size_t count, int root);

/* chain layouts of the k-chain reduce over m non-root members: returns the number of chains */
int rm_chains_fixed(int m, int k, int *lengths);
int rm_chains_adaptive(int m, int *lengths);

/* the topology of a communicator (cached on it; freed with it) */
const rm_topo *rm_topo_get(MPI_Comm comm, int *err);

#endif
