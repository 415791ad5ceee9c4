"""What the code generator is asked for (CodegenOptions) and what it hands back (LoweredModule)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..shapes import Shape


@dataclass
class CodegenOptions:
    opt_level: int = 3
    triple: Optional[str] = None
    cpu: Optional[str] = None
    features: Optional[str] = None
    run_pipeline: bool = True  # run the 'default' pipeline first so fusions decide the loop nests

    def key(self) -> str:
        return f"O{self.opt_level};{self.triple};{self.cpu};{self.features};{self.run_pipeline}"


@dataclass
class LoweredModule:
    llvm_ir: str
    entry_name: str
    params: list[Shape] = field(default_factory=list)
    results: list[Shape] = field(default_factory=list)
    temp_bytes: int = 0
    libraries: list[str] = field(default_factory=list)   # shared libraries the code calls (LAPACK)
