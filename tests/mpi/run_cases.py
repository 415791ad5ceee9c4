"""Run hlo-run on several modules in one MPI job: one launch instead of one per module.

    mpiexec -n N python tests/mpi/run_cases.py 'MODULE|INPUTS|OUTPUT[|OPTION...]' ...
"""
import sys

from hlo_cli.hlo_run import main

if __name__ == "__main__":
    for spec in sys.argv[1:]:
        module, inputs, output, *options = spec.split("|")
        main.main([module, "--inputs", inputs, "--no-print", "-o", output, *options], standalone_mode=False)
