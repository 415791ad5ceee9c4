/* The collective hooks of compiled HLO modules (docs/DISTRIBUTED.md).

   A compiled module whose program has collectives calls them through the hook table its
   global <entry>_collectives points at; the host program supplies the table (the JIT
   does for Python; hlo_collectives_mpi.c is a ready implementation on MPI, one device per
   rank). A collective call runs with a description of the instruction (hlo_collective)
   and the device's input and output buffers, dense and row-major:

     kind                    input                        output
     HLO_ALL_REDUCE          count elements               count elements: the fold, in group order
     HLO_ALL_GATHER          [outer][inner_bytes]         [outer][group size][inner_bytes], group order
     HLO_REDUCE_SCATTER      [outer][n][inner_bytes]      [outer][inner_bytes]: block at the device's position
     HLO_ALL_TO_ALL          [outer][n][inner_bytes]      [outer][n][inner_bytes]: block j from member j
     HLO_COLLECTIVE_PERMUTE  count bytes                  count bytes: the source's input, or zeros
     HLO_COLLECTIVE_BROADCAST count bytes                 count bytes: the group's first member's input

   Who takes part follows XLA: channel_id (-1: none), use_global_device_ids (-1: not an
   attribute of the op), replica groups as lists of ids (num_groups == 0: one group of
   every id), source-target pairs for collective-permute; a device's flattened id is
   replica * num_partitions + partition. A hook returns 0, or non-zero when it failed (the
   compiled function then returns at once; the host reports the failure). A NULL table
   when a collective runs aborts the process. */
#ifndef HLO_COLLECTIVES_H_
#define HLO_COLLECTIVES_H_

#include <stdint.h>

enum hlo_collective_kind {
  HLO_ALL_REDUCE = 1, HLO_ALL_GATHER = 2, HLO_REDUCE_SCATTER = 3, HLO_ALL_TO_ALL = 4,
  HLO_COLLECTIVE_PERMUTE = 5, HLO_COLLECTIVE_BROADCAST = 6
};

/* The reduction of HLO_ALL_REDUCE and HLO_REDUCE_SCATTER when to_apply is this one binary op
   (XLA semantics: max/min propagate NaN and order -0 below +0; integers wrap around);
   HLO_REDUCE_OTHER: another computation (its text is in to_apply). */
enum hlo_reduction {
  HLO_REDUCE_OTHER = 0,
  HLO_REDUCE_ADD = 1, HLO_REDUCE_MULTIPLY = 2, HLO_REDUCE_MINIMUM = 3, HLO_REDUCE_MAXIMUM = 4,
  HLO_REDUCE_AND = 5, HLO_REDUCE_OR = 6, HLO_REDUCE_XOR = 7
};

/* Element types, numbered as XLA's PrimitiveType (0: another type, moved as bytes only). */
enum hlo_element_type {
  HLO_PRED = 1, HLO_S8 = 2, HLO_S16 = 3, HLO_S32 = 4, HLO_S64 = 5, HLO_U8 = 6, HLO_U16 = 7,
  HLO_U32 = 8, HLO_U64 = 9, HLO_F16 = 10, HLO_F32 = 11, HLO_F64 = 12, HLO_BF16 = 16
};

typedef struct hlo_collective {
  int32_t kind;                   /* enum hlo_collective_kind */
  int32_t element_type;           /* enum hlo_element_type */
  int32_t element_bytes;
  int32_t reduction;              /* enum hlo_reduction (reductions only) */
  int64_t channel_id;             /* -1: none */
  int32_t use_global_device_ids;  /* -1: not an attribute of this op; 0; 1 */
  int32_t num_replicas;
  int32_t num_partitions;
  int32_t num_groups;             /* replica_groups: group g is ids[group_starts[g] .. group_starts[g + 1]) */
  int32_t num_pairs;              /* collective-permute: pair k is (pairs[2k], pairs[2k + 1]) */
  int32_t reserved;
  const int64_t* group_starts;    /* num_groups + 1 entries */
  const int64_t* ids;
  const int64_t* pairs;
  int64_t outer;
  int64_t inner_bytes;
  int64_t count;                  /* elements (all-reduce) or bytes (permute, broadcast) */
  int64_t index;                  /* the collective's number in the module */
  const char* name;               /* "%name (file:line:col)", for messages */
  const char* to_apply;           /* reductions: the to_apply computation as an HLO module's text */
} hlo_collective;

typedef struct hlo_collectives_table {
  void* context;                                        /* the host's, passed to every hook */
  int64_t (*device_id)(void* context);                  /* this device's flattened id */
  int32_t (*collective)(void* context, const hlo_collective* op, const void* input, void* output);
} hlo_collectives_table;

#endif  /* HLO_COLLECTIVES_H_ */
