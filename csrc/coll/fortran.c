/* Fortran entry points of the interposed collectives. Open MPI's Fortran bindings (mpif.h,
 * use mpi, use mpi_f08) call PMPI_* inside the library, out of an LD_PRELOAD's reach; these
 * take the Fortran symbols first, convert the handles and hand the call to the C entry
 * points of this library, which choose a kernel or pass it on. MPICH's bindings call the C
 * MPI_* functions and need nothing here. */
#include "coll.h"
#include "fortran_sentinels.h"

#ifdef OPEN_MPI
static void f_allreduce(void *sb, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                        MPI_Fint *ierr)
{
    int rc = MPI_Allreduce(rm_fortran_buf(sb), rm_fortran_buf(rb), (int)*count, PMPI_Type_f2c(*dt), PMPI_Op_f2c(*op),
                           PMPI_Comm_f2c(*comm));
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

static void f_reduce(void *sb, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                     MPI_Fint *comm, MPI_Fint *ierr)
{
    int rc = MPI_Reduce(rm_fortran_buf(sb), rm_fortran_buf(rb), (int)*count, PMPI_Type_f2c(*dt), PMPI_Op_f2c(*op), (int)*root,
                        PMPI_Comm_f2c(*comm));
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

static void f_bcast(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    int rc = MPI_Bcast(rm_fortran_buf(buf), (int)*count, PMPI_Type_f2c(*dt), (int)*root, PMPI_Comm_f2c(*comm));
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

/* every spelling a Fortran compiler may use, and use mpi_f08's own entry point (same layout:
 * its handles are derived types holding the integer handle) */
#define ALLREDUCE_ARGS void *sb, void *rb, MPI_Fint *c, MPI_Fint *d, MPI_Fint *o, MPI_Fint *m, MPI_Fint *e
#define REDUCE_ARGS void *sb, void *rb, MPI_Fint *c, MPI_Fint *d, MPI_Fint *o, MPI_Fint *r, MPI_Fint *m, MPI_Fint *e
#define BCAST_ARGS void *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *r, MPI_Fint *m, MPI_Fint *e
#define SPELLINGS(low, UP, ARGS, CALL)            \
    void low(ARGS);                               \
    void low##_(ARGS);                            \
    void low##__(ARGS);                           \
    void UP(ARGS);                                \
    void low##_f08_(ARGS);                        \
    void low(ARGS) { CALL; }                      \
    void low##_(ARGS) { CALL; }                   \
    void low##__(ARGS) { CALL; }                  \
    void UP(ARGS) { CALL; }                       \
    void low##_f08_(ARGS) { CALL; }

SPELLINGS(mpi_allreduce, MPI_ALLREDUCE, ALLREDUCE_ARGS, f_allreduce(sb, rb, c, d, o, m, e))
SPELLINGS(mpi_reduce, MPI_REDUCE, REDUCE_ARGS, f_reduce(sb, rb, c, d, o, r, m, e))
SPELLINGS(mpi_bcast, MPI_BCAST, BCAST_ARGS, f_bcast(b, c, d, r, m, e))
#endif
