/* The collective hooks of compiled HLO modules, on MPI: one device per rank (docs/DISTRIBUTED.md).

     #include "my_module.h"                 (hlo-aot's header: declares my_module_collectives)
     int hlo_collectives_mpi_init(hlo_collectives_table* table, MPI_Comm comm, double timeout_seconds);

     hlo_collectives_table table;
     hlo_collectives_mpi_init(&table, MPI_COMM_WORLD, 0);   (0: the default timeout, 300 s)
     my_module_collectives = &table;
     my_module(args, results, temp);

   Rank r of comm runs the device whose flattened id is r (replica r / num_partitions,
   partition r % num_partitions); comm must have num_replicas x num_partitions ranks.
   Every collective follows XLA's grouping rules and the interpreter's semantics: reductions
   fold the members' values in group order (add, multiply, minimum, maximum, and, or, xor on
   pred, integers, f32 and f64), so results are bit for bit those of hlo-run. Each call waits at
   most the timeout; a failure prints "rank R: <instruction>: <why>" on stderr and makes the
   compiled function return (hlo_collectives_mpi_failed() then says so).

   Build: mpicc -c hlo_collectives_mpi.c (C99; the MPI library's headers). */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "hlo_collectives.h"

#define HLO_MAX_CACHED 4096

typedef struct {
  MPI_Comm comm;
  int rank, size;
  double timeout;
  int failed;
  int64_t cached[HLO_MAX_CACHED];     /* instruction index + 1 of each cached group communicator */
  MPI_Comm groups[HLO_MAX_CACHED];
  int count;
} hlo_mpi_state;

static hlo_mpi_state state;

enum group_mode { CROSS_REPLICA, CROSS_PARTITION, CROSS_REPLICA_AND_PARTITION, FLATTENED_ID };

static int fail(const hlo_collective* op, const char* why) {
  fprintf(stderr, "rank %d: %s: %s\n", state.rank, op->name ? op->name : "collective", why);
  fflush(stderr);
  state.failed = 1;
  return 1;
}

/* ------------------------------------------------------------------------ who takes part */

static int mode_of(const hlo_collective* op, enum group_mode* mode) {
  if (op->channel_id < 0) {
    if (op->use_global_device_ids == 1) return 1;
    *mode = CROSS_REPLICA;
  } else if (op->use_global_device_ids < 0) {
    *mode = CROSS_PARTITION;
  } else {
    *mode = op->use_global_device_ids ? FLATTENED_ID : CROSS_REPLICA_AND_PARTITION;
  }
  return 0;
}

static int64_t id_count(enum group_mode mode, int64_t replicas, int64_t partitions) {
  if (mode == CROSS_PARTITION) return partitions;
  if (mode == FLATTENED_ID) return replicas * partitions;
  return replicas;
}

static int contains(const int64_t* ids, int64_t n, int64_t id) {
  int64_t i;
  for (i = 0; i < n; ++i)
    if (ids[i] == id) return 1;
  return 0;
}

/* This device's group as flattened ids in group order (members must hold replicas x partitions);
   returns its size, 0 when the device is in no group, -1 for an invalid description. */
static int64_t my_group(const hlo_collective* op, int64_t me, int64_t* members) {
  enum group_mode mode;
  int64_t P = op->num_partitions, R = op->num_replicas, r = me / P, p = me % P;
  int64_t g, i, q, n, all = 0;
  int64_t* every = NULL;
  if (mode_of(op, &mode)) return -1;
  if (op->num_groups == 0) {
    all = id_count(mode, R, P);
    every = (int64_t*)malloc(sizeof(int64_t) * (size_t)all);
    for (i = 0; i < all; ++i) every[i] = i;
  }
  for (g = 0; g < (op->num_groups ? op->num_groups : 1); ++g) {
    const int64_t* ids = op->num_groups ? op->ids + op->group_starts[g] : every;
    int64_t size = op->num_groups ? op->group_starts[g + 1] - op->group_starts[g] : all;
    n = 0;
    if (mode == FLATTENED_ID && contains(ids, size, me)) {
      for (i = 0; i < size; ++i) members[n++] = ids[i];
    } else if (mode == CROSS_REPLICA_AND_PARTITION && contains(ids, size, r)) {
      for (i = 0; i < size; ++i)
        for (q = 0; q < P; ++q) members[n++] = ids[i] * P + q;
    } else if (mode == CROSS_REPLICA && contains(ids, size, r)) {
      for (i = 0; i < size; ++i) members[n++] = ids[i] * P + p;
    } else if (mode == CROSS_PARTITION && contains(ids, size, p)) {
      for (i = 0; i < size; ++i) members[n++] = r * P + ids[i];
    }
    if (n) {
      free(every);
      return n;
    }
  }
  free(every);
  return 0;
}

/* The communicator of this device's group for this instruction (ranks in group order), made once.
   Every device runs every collective instruction, so the split is collective over all ranks. */
static int group_comm(const hlo_collective* op, const int64_t* members, int64_t n, MPI_Comm* comm) {
  int k, color = MPI_UNDEFINED, key = 0;
  int64_t i;
  for (k = 0; k < state.count; ++k)
    if (state.cached[k] == op->index + 1) {
      *comm = state.groups[k];
      return 0;
    }
  if (state.count == HLO_MAX_CACHED) return fail(op, "too many collective instructions");
  if (n > 0) {
    color = (int)members[0];
    for (i = 0; i < n; ++i) {
      if (members[i] < color) color = (int)members[i];
      if (members[i] == state.rank) key = (int)i;
    }
  }
  if (MPI_Comm_split(state.comm, color, key, comm) != MPI_SUCCESS) return fail(op, "MPI_Comm_split failed");
  state.cached[state.count] = op->index + 1;
  state.groups[state.count++] = *comm;
  return 0;
}

static int wait_all(const hlo_collective* op, int n, MPI_Request* requests) {
  double deadline = MPI_Wtime() + state.timeout;
  long spins = 0;
  int done = 0;
  char why[160];
  for (;;) {
    if (MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return fail(op, "MPI failed");
    if (done) return 0;
    if (++spins % 1024 == 0) {
      if (MPI_Wtime() > deadline) {
        snprintf(why, sizeof why, "timed out after %g s waiting for the other members of its group "
                 "(one died, or went to another collective)", state.timeout);
        return fail(op, why);
      }
      sched_yield();
    }
  }
}

/* ------------------------------------------------------------------------ reductions */

#define FLOAT_MAX(x, y) ((isnan(x) || (!isnan(y) && ((x) > (y) || ((x) == (y) && !(signbit(x) && !signbit(y)))))) ? (x) : (y))
#define FLOAT_MIN(x, y) ((isnan(x) || (!isnan(y) && ((x) < (y) || ((x) == (y) && !(!signbit(x) && signbit(y)))))) ? (x) : (y))

#define FOLD(T, EXPR)                           \
  {                                             \
    T* a = (T*)acc;                             \
    const T* b = (const T*)value;               \
    for (i = 0; i < count; ++i) {               \
      T x = a[i], y = b[i];                     \
      a[i] = (T)(EXPR);                         \
    }                                           \
    return 0;                                   \
  }

#define FOLD_FLOAT(T)                                        \
  switch (op->reduction) {                                   \
    case HLO_REDUCE_ADD: FOLD(T, x + y)                      \
    case HLO_REDUCE_MULTIPLY: FOLD(T, x * y)                 \
    case HLO_REDUCE_MAXIMUM: FOLD(T, FLOAT_MAX(x, y))        \
    case HLO_REDUCE_MINIMUM: FOLD(T, FLOAT_MIN(x, y))        \
    default: break;                                          \
  }

/* Signed integers add and multiply as their unsigned counterparts: they wrap around. */
#define FOLD_INT(T, U)                                       \
  switch (op->reduction) {                                   \
    case HLO_REDUCE_ADD: FOLD(T, (U)x + (U)y)                \
    case HLO_REDUCE_MULTIPLY: FOLD(T, (U)x * (U)y)           \
    case HLO_REDUCE_MAXIMUM: FOLD(T, x > y ? x : y)          \
    case HLO_REDUCE_MINIMUM: FOLD(T, x < y ? x : y)          \
    case HLO_REDUCE_AND: FOLD(T, x & y)                      \
    case HLO_REDUCE_OR: FOLD(T, x | y)                       \
    case HLO_REDUCE_XOR: FOLD(T, x ^ y)                      \
    default: break;                                          \
  }

/* acc[i] = to_apply(acc[i], value[i]) for count elements. */
static int combine(const hlo_collective* op, void* acc, const void* value, int64_t count) {
  int64_t i;
  switch (op->element_type) {
    case HLO_F32: FOLD_FLOAT(float) break;
    case HLO_F64: FOLD_FLOAT(double) break;
    case HLO_S8: FOLD_INT(int8_t, uint8_t) break;
    case HLO_S16: FOLD_INT(int16_t, uint16_t) break;
    case HLO_S32: FOLD_INT(int32_t, uint32_t) break;
    case HLO_S64: FOLD_INT(int64_t, uint64_t) break;
    case HLO_U8: FOLD_INT(uint8_t, uint8_t) break;
    case HLO_U16: FOLD_INT(uint16_t, uint16_t) break;
    case HLO_U32: FOLD_INT(uint32_t, uint32_t) break;
    case HLO_U64: FOLD_INT(uint64_t, uint64_t) break;
    case HLO_PRED:
      switch (op->reduction) {
        case HLO_REDUCE_ADD: case HLO_REDUCE_OR: case HLO_REDUCE_MAXIMUM: FOLD(uint8_t, x | y)
        case HLO_REDUCE_MULTIPLY: case HLO_REDUCE_AND: case HLO_REDUCE_MINIMUM: FOLD(uint8_t, x & y)
        case HLO_REDUCE_XOR: FOLD(uint8_t, x ^ y)
        default: break;
      }
      break;
    default: break;
  }
  return fail(op, op->reduction == HLO_REDUCE_OTHER
                      ? "hlo_collectives_mpi.c reduces with a single add, multiply, minimum, maximum, and, or or "
                        "xor only; this to_apply is another computation (hlo-run runs it)"
                      : "hlo_collectives_mpi.c has no such reduction for this element type (pred, integers, f32, f64)");
}

/* ------------------------------------------------------------------------ the collectives */

static int checked_int(const hlo_collective* op, int64_t v, int* out) {
  if (v < 0 || v > 2147483647) return fail(op, "a buffer larger than 2 GB per message");
  *out = (int)v;
  return 0;
}

/* Every member's `bytes` of input, in group order, into gathered (n x bytes). */
static int gather(const hlo_collective* op, MPI_Comm comm, const void* input, int64_t bytes, void* gathered) {
  MPI_Request request;
  int size;
  if (checked_int(op, bytes, &size)) return 1;
  if (MPI_Iallgather(input, size, MPI_BYTE, gathered, size, MPI_BYTE, comm, &request) != MPI_SUCCESS)
    return fail(op, "MPI_Iallgather failed");
  return wait_all(op, 1, &request);
}

static int all_reduce(const hlo_collective* op, MPI_Comm comm, int64_t n, const void* input, void* output) {
  int64_t bytes = op->count * op->element_bytes, k;
  char* gathered = (char*)malloc((size_t)(n * bytes) + 1);
  int status = gather(op, comm, input, bytes, gathered);
  if (!status) {
    memcpy(output, gathered, (size_t)bytes);
    for (k = 1; k < n && !status; ++k) status = combine(op, output, gathered + k * bytes, op->count);
  }
  free(gathered);
  return status;
}

static int reduce_scatter(const hlo_collective* op, MPI_Comm comm, int64_t n, int64_t position, const void* input,
                          void* output) {
  int64_t block = op->inner_bytes, row = n * block, bytes = op->outer * row, k, o;
  char* gathered = (char*)malloc((size_t)(n * bytes) + 1);
  char* out = (char*)output;
  int status = gather(op, comm, input, bytes, gathered);
  for (o = 0; o < op->outer && !status; ++o) {
    memcpy(out + o * block, gathered + o * row + position * block, (size_t)block);
    for (k = 1; k < n && !status; ++k)
      status = combine(op, out + o * block, gathered + k * bytes + o * row + position * block,
                       block / op->element_bytes);
  }
  free(gathered);
  return status;
}

static int all_gather(const hlo_collective* op, MPI_Comm comm, int64_t n, const void* input, void* output) {
  int64_t block = op->inner_bytes, bytes = op->outer * block, k, o;
  char* gathered = (char*)malloc((size_t)(n * bytes) + 1);
  int status = gather(op, comm, input, bytes, gathered);
  for (o = 0; o < op->outer && !status; ++o)
    for (k = 0; k < n; ++k)
      memcpy((char*)output + (o * n + k) * block, gathered + k * bytes + o * block, (size_t)block);
  free(gathered);
  return status;
}

static int all_to_all(const hlo_collective* op, MPI_Comm comm, int64_t n, const void* input, void* output) {
  int64_t block = op->inner_bytes, bytes = op->outer * block, j, o;
  char* send = (char*)malloc((size_t)(n * bytes) + 1);
  char* recv = (char*)malloc((size_t)(n * bytes) + 1);
  MPI_Request request;
  int size, status;
  for (o = 0; o < op->outer; ++o)      /* block j of every row goes to member j */
    for (j = 0; j < n; ++j) memcpy(send + j * bytes + o * block, (const char*)input + (o * n + j) * block, (size_t)block);
  status = checked_int(op, bytes, &size);
  if (!status && MPI_Ialltoall(send, size, MPI_BYTE, recv, size, MPI_BYTE, comm, &request) != MPI_SUCCESS)
    status = fail(op, "MPI_Ialltoall failed");
  if (!status) status = wait_all(op, 1, &request);
  for (o = 0; o < op->outer && !status; ++o)
    for (j = 0; j < n; ++j) memcpy((char*)output + (o * n + j) * block, recv + j * bytes + o * block, (size_t)block);
  free(send);
  free(recv);
  return status;
}

static int collective_permute(const hlo_collective* op, int64_t me, const void* input, void* output) {
  int64_t P = op->num_partitions, r = me / P, p = me % P, mine = op->channel_id < 0 ? r : p, k;
  int64_t source = -1, target = -1;
  MPI_Request requests[2];
  int n = 0, size, tag = (int)(op->index % 30000) + 100;
  for (k = 0; k < op->num_pairs; ++k) {
    if (op->pairs[2 * k] == mine) target = op->pairs[2 * k + 1];
    if (op->pairs[2 * k + 1] == mine) source = op->pairs[2 * k];
  }
  if (checked_int(op, op->count, &size)) return 1;
  if (source < 0) memset(output, 0, (size_t)op->count);
#define FLAT(x) (op->channel_id < 0 ? (x) * P + p : r * P + (x))
  if (source >= 0 && MPI_Irecv(output, size, MPI_BYTE, (int)FLAT(source), tag, state.comm, &requests[n++]) != MPI_SUCCESS)
    return fail(op, "MPI_Irecv failed");
  if (target >= 0 && MPI_Isend(input, size, MPI_BYTE, (int)FLAT(target), tag, state.comm, &requests[n++]) != MPI_SUCCESS)
    return fail(op, "MPI_Isend failed");
#undef FLAT
  return wait_all(op, n, requests);
}

static int collective_broadcast(const hlo_collective* op, MPI_Comm comm, int64_t n, const void* input, void* output) {
  MPI_Request request;
  int size, position;
  if (n == 0) {
    memset(output, 0, (size_t)op->count);
    return 0;
  }
  if (checked_int(op, op->count, &size)) return 1;
  MPI_Comm_rank(comm, &position);
  if (position == 0) memcpy(output, input, (size_t)op->count);
  if (MPI_Ibcast(output, size, MPI_BYTE, 0, comm, &request) != MPI_SUCCESS) return fail(op, "MPI_Ibcast failed");
  return wait_all(op, 1, &request);
}

static int64_t device_id(void* context) {
  (void)context;
  return state.rank;
}

static int32_t run(void* context, const hlo_collective* op, const void* input, void* output) {
  int64_t me = state.rank, n, position = 0, i;
  int64_t* members;
  MPI_Comm comm = MPI_COMM_NULL;
  int status;
  (void)context;
  if ((int64_t)op->num_replicas * op->num_partitions != state.size) {
    char why[160];
    snprintf(why, sizeof why, "the module runs on %d x %d devices but the communicator has %d ranks",
             op->num_replicas, op->num_partitions, state.size);
    return fail(op, why);
  }
  if (op->kind == HLO_COLLECTIVE_PERMUTE) return collective_permute(op, me, input, output);
  members = (int64_t*)malloc(sizeof(int64_t) * (size_t)state.size);
  n = my_group(op, me, members);
  for (i = 0; i < n; ++i)
    if (members[i] == me) position = i;
  status = n < 0 ? fail(op, "use_global_device_ids=true needs a channel_id") : group_comm(op, members, n, &comm);
  free(members);
  if (status) return 1;
  if (n == 0 && op->kind != HLO_COLLECTIVE_BROADCAST) return fail(op, "this device is in none of the replica groups");
  switch (op->kind) {
    case HLO_ALL_REDUCE: return all_reduce(op, comm, n, input, output);
    case HLO_REDUCE_SCATTER: return reduce_scatter(op, comm, n, position, input, output);
    case HLO_ALL_GATHER: return all_gather(op, comm, n, input, output);
    case HLO_ALL_TO_ALL: return all_to_all(op, comm, n, input, output);
    case HLO_COLLECTIVE_BROADCAST: return collective_broadcast(op, comm, n, input, output);
    default: return fail(op, "unknown collective kind");
  }
}

int hlo_collectives_mpi_init(hlo_collectives_table* table, MPI_Comm comm, double timeout_seconds) {
  memset(&state, 0, sizeof state);
  state.comm = comm;
  MPI_Comm_rank(comm, &state.rank);
  MPI_Comm_size(comm, &state.size);
  state.timeout = timeout_seconds > 0 ? timeout_seconds : 300.0;
  table->context = &state;
  table->device_id = device_id;
  table->collective = run;
  return 0;
}

int hlo_collectives_mpi_failed(void) { return state.failed; }
