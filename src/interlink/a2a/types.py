"""Every A2A 1.0 type (generated from `a2a.proto`), for `from interlink.a2a import types
as t`: `t.AgentCard`, `t.Message`, `t.Part`, `t.Task`, `t.TaskState`, ..."""

from interlink.a2a._types import *  # noqa: F403
from interlink.a2a._types import __all__ as __all__
