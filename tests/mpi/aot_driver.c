/* Runs an hlo-aot object with collectives on MPI, one device per rank: reads the device's
   arguments from DIR/inRANK.bin (concatenated buffers), writes its results to DIR/outRANK.bin. */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include MODULE_HEADER

int hlo_collectives_mpi_init(hlo_collectives_table* table, MPI_Comm comm, double timeout_seconds);
int hlo_collectives_mpi_failed(void);

static void* buffer(size_t size) {
  void* p = NULL;
  size_t rounded = (size + 63) / 64 * 64;
  if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0) exit(3);
  memset(p, 0, rounded ? rounded : 64);
  return p;
}

int main(int argc, char** argv) {
  void* args[NAME(_NUM_ARGS) + 1];
  void* results[NAME(_NUM_RESULTS) + 1];
  char path[4096];
  hlo_collectives_table table;
  int rank, i;
  FILE* f;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 2) return 2;
  snprintf(path, sizeof path, "%s/in%d.bin", argv[1], rank);
  f = fopen(path, "rb");
  if (!f) return 4;
  for (i = 0; i < NAME(_NUM_ARGS); ++i) {
    args[i] = buffer(NAME(_arg_sizes)[i]);
    if (fread(args[i], 1, NAME(_arg_sizes)[i], f) != NAME(_arg_sizes)[i]) return 5;
  }
  fclose(f);
  for (i = 0; i < NAME(_NUM_RESULTS); ++i) results[i] = buffer(NAME(_result_sizes)[i]);
  hlo_collectives_mpi_init(&table, MPI_COMM_WORLD, 60);
  NAME(_collectives) = &table;
  NAME()(args, results, buffer(NAME(_TEMP_SIZE)));
  if (hlo_collectives_mpi_failed()) return 6;
  snprintf(path, sizeof path, "%s/out%d.bin", argv[1], rank);
  f = fopen(path, "wb");
  if (!f) return 7;
  for (i = 0; i < NAME(_NUM_RESULTS); ++i)
    if (fwrite(results[i], 1, NAME(_result_sizes)[i], f) != NAME(_result_sizes)[i]) return 8;
  fclose(f);
  MPI_Finalize();
  return 0;
}
