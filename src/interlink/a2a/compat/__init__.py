"""Other versions of A2A at the edge: the 0.3 wire types (generated from the legacy
schema, `_v03_types`) and one translation each way to the 1.0 core (`_v03`).

A server answering a 0.3 client calls `request_from_v03` on the 0.3 method and params
and `result_to_v03` (or `error_to_v03`) on what the 1.0 handler returns; a client
talking to a 0.3 agent calls `request_to_v03`, `result_from_v03` and `error_from_v03`.
The card: `card_to_v03` / `card_from_v03`. 0.3's HTTP+JSON binding reshapes that 0.3
JSON into its ProtoJSON bodies (`_v03_rest`) and its calls, both ways (`_v03_rest_calls`).
"""

from interlink.a2a.compat import _v03_types as v03
from interlink.a2a.compat._v03 import *  # noqa: F403
from interlink.a2a.compat._v03 import __all__ as _all

__all__ = ["v03", *_all]
