"""The engine's core: one config prepared once as a ``Trial`` (``trial``), judged draw by draw under the verdict policy
(``execute``) with the comparison rules and the ``Verdict`` (``compare``), the clock of its phases (``phases``) and the
Torch result cache (``torch_cache``). Below it: the config grammar, the draws and the specs; above it: the readings,
the diagnosis and the pool."""
