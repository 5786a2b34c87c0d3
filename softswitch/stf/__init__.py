"""p4c's STF test format, run against the softswitch.

Public API::

    run_stf(program_path, stf_path, include_dirs=(), defines={}) -> StfResult
    run_script(script, target) -> StfResult        # target: a loaded pipeline
    parse_stf(text, file) / parse_stf_file(path) -> StfScript
    StfResult.passed, StfResult.report()

Modules, in the order data flows through them: ``syntax`` (text to commands),
``control`` (control-plane commands onto the runtime state), ``expect``
(output packets against ``expect`` lines) and ``runner`` (the loop).
"""

from softswitch.stf.runner import StfResult, Target, run_script, run_stf
from softswitch.stf.syntax import StfScript, parse_stf, parse_stf_file

__all__ = [
    "StfResult",
    "StfScript",
    "Target",
    "parse_stf",
    "parse_stf_file",
    "run_script",
    "run_stf",
]
