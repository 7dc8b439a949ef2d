// This process's place in an MPI job (Open MPI or MPICH): MPI is initialised on first use with MPI_THREAD_FUNNELED
// (every MPI call from the thread that initialised it) and finalised at exit; errors return (MPI_ERRORS_RETURN) and
// become an Error naming the call. Owns: the world communicator's collectives and their counters.
// Must not know: models, engines or requests.
#pragma once
#include <memory>

#include "model/collectives.h"

namespace slimkv {

bool mpi_built();  // false when slimkv was built without an MPI library (then mpi_world() throws)
// The collectives over MPI_COMM_WORLD (initialises MPI on the first call, at MPI_THREAD_FUNNELED — or
// MPI_THREAD_SERIALIZED with `serialized`, for a server whose engine thread, not the main one, makes the calls
// after the load: still one thread at a time).
std::shared_ptr<Collectives> mpi_world(bool serialized = false);

// Benchmarks: every rank switches the all-reduce between the same-host shared-memory path (dist/shm_all_reduce.h,
// when available) and MPI_Allreduce alike; returns the previous choice.
bool mpi_use_shared_memory_all_reduce(bool on);
// Ends every rank of the job with `code` after an error on this one (MPI_Abort), so no rank waits forever in a
// collective; nothing when MPI was never initialised.
void mpi_abort_if_running(int code);

}  // namespace slimkv
