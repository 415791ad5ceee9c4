"""EMITTERS: the code generator of every opcode the backend compiles, and why it does not compile the rest.

An emitter is `emit(lowering, inst)` (lowering: kernels.Lowering): it writes the
instruction's value into its buffers. Each is registered beside its definition
(kernels.py, special_kernels.py); every op that has an element generator (elemental.py)
and no emitter of its own is one loop nest over its output (kernels.emit_loop).
A registration may carry details:

    scratch_bytes=fn(inst) -> int   working memory the emitter needs while it runs
                                    (buffers.py reserves it in the temp arena)
    expanded_by="pass-name"         the op is compiled through that pass's expansion into
                                    simpler HLO, which lowering.prepare runs first

`unsupported` records the opcodes the backend deliberately does not compile, with the
reason users see in the error (docs/ARCHITECTURE.md lists them).
"""
from __future__ import annotations

from ..diagnostics import HloError, error, written_name
from ..ir import Instruction
from ..opcodes import Op
from ..registry import OpRegistry

EMITTERS = OpRegistry("code generator")


def unsupported_error(inst: Instruction) -> HloError:
    """The located error for an instruction the backend does not compile."""
    reason = EMITTERS.reason(inst.opcode)
    detail = f": {reason}" if reason else ""
    return error(f"the cpu backend does not support '{inst.opcode}' (%{written_name(inst.loc, inst.name)}){detail}", inst.loc)


# --------------------------------------------------------------------------- compiled after an expansion

@EMITTERS.register(Op.BATCH_NORM_TRAINING, Op.BATCH_NORM_INFERENCE, Op.BATCH_NORM_GRAD,
                   expanded_by="batchnorm-expander")
@EMITTERS.register(Op.RNG_BIT_GENERATOR, expanded_by="rng-bit-generator-expander")
def emit_unexpanded(lowering, inst: Instruction) -> None:
    """Reached only when the expander pass is not available: it would have rewritten inst."""
    expander = EMITTERS.details(inst.opcode)["expanded_by"]
    raise error(f"the cpu backend compiles '{inst.opcode}' through the {expander} pass, which is not "
                f"available (%{written_name(inst.loc, inst.name)})", inst.loc)


def expander_passes(opcodes) -> list[str]:
    """The passes that rewrite these opcodes first, in a fixed order."""
    return sorted({EMITTERS.details(op)["expanded_by"] for op in opcodes if "expanded_by" in EMITTERS.details(op)})


# --------------------------------------------------------------------------- not compiled
# docs/ARCHITECTURE.md lists these with their reasons (tests/architecture checks it).

# Every other collective compiles to a call of the collective hooks (collectives.py).
EMITTERS.unsupported(Op.RAGGED_ALL_TO_ALL, Op.COLLECTIVE_REDUCE,
                     reason="not compiled, because the collective hooks have no ragged exchange "
                            "(the interpreter runs ragged-all-to-all; collective-reduce has no public semantics)")
EMITTERS.unsupported(Op.INFEED, Op.OUTFEED, Op.SEND, Op.SEND_DONE, Op.RECV, Op.RECV_DONE,
                     reason="not compiled, because compiled code has no host queues or channels")
EMITTERS.unsupported(Op.DYNAMIC_RESHAPE, Op.SET_DIMENSION_SIZE,
                     reason="not compiled, because compiled code has static shapes only (issue 16)")
