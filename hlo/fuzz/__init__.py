"""A differential fuzzer for the toolchain: random valid modules, checked against each other.

`generate(seed)` builds a random valid module (program.py; the per-opcode generators are in
generators.py, covering every opcode or saying why not) with its inputs. `check(program)`
(oracles.py) then checks that:

* the printed module parses back to the same text;
* the default pipeline and randomly chosen passes keep the interpreter's results;
* the compiled backend (JIT, and AOT through a C driver when asked) gives the interpreter's
  results, or refuses the module at an instruction it does not compile;
* XLA:CPU gives the interpreter's results, when jax is installed (in a child process).

Values are compared exactly where every implementation must agree bit for bit (integers,
and floats that are small integers: generators keep track of which values are exact) and
within a tolerance elsewhere. `mutation.py` feeds damaged module texts to the tools, which
must answer with a located error or a result, never a traceback or a hang.

tools/hlo_fuzz.py runs long campaigns from a seed; tests/fuzz runs a short one and the
regressions the fuzzer found.
"""
from .oracles import Finding, check
from .program import Program, generate

__all__ = ["Finding", "Program", "check", "generate"]
