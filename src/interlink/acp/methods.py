"""Typed descriptors of the stable ACP v1 methods, for registering handlers:

    agent = Agent()

    @agent.on(methods.PROMPT)
    async def prompt(params: s.PromptRequest) -> s.PromptResponse: ...

Each is the method's entry of the generated table, a `MethodSpec[Params, Result]`
(`Result` is None for a notification), so a handler of the wrong shape is a type error.
"""

from interlink.acp._methods import *  # noqa: F403
from interlink.acp._methods import __all__ as __all__
