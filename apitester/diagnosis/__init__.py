"""The diagnosis of a failing config, on a ``Trial`` (apitester.engine.trial): who is off and by how much, why, and the
smallest input that still fails.

- ``oracle``: measuring each side against a float64 oracle (``read_output``), the spec's independent reference
  (``Reference``), the gradients and the numeric gradient check (``gradient_check``);
- ``conventions``: failures that are not about values (dtype, shape, raises, ties, subgradients), typed as
  ``Convention``;
- ``ties``: each side's rounding rule at inputs placed on a tie;
- ``shrink``: the greedy shrink to the smallest config with the same failure;
- ``repro``: the standalone repro script of a shrunk config;
- ``diagnose``: one config's diagnosis (the JSON the board stores) and the signature that groups failures.
"""
