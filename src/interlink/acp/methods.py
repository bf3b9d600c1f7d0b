"""Typed descriptors of the stable ACP v1 methods, for registering handlers:

    agent = Agent()

    @agent.on(methods.PROMPT)
    async def prompt(params: s.PromptRequest) -> s.PromptResponse: ...

Each is the method's entry of the generated table, a `MethodSpec[Params, Result]`
(`Result` is None for a notification), so a handler of the wrong shape is a type error.
"""

from __future__ import annotations

from interlink.acp._methods import (
    AUTHENTICATE,
    CANCEL,
    CLOSE_SESSION,
    COMPLETE_ELICITATION,
    CREATE_ELICITATION,
    CREATE_TERMINAL,
    DELETE_SESSION,
    INITIALIZE,
    KILL_TERMINAL,
    LIST_SESSIONS,
    LOAD_SESSION,
    LOGOUT,
    NEW_SESSION,
    PROMPT,
    READ_TEXT_FILE,
    RELEASE_TERMINAL,
    REQUEST_PERMISSION,
    RESUME_SESSION,
    SESSION_UPDATE,
    SET_SESSION_CONFIG_OPTION,
    SET_SESSION_MODE,
    TERMINAL_OUTPUT,
    WAIT_FOR_TERMINAL_EXIT,
    WRITE_TEXT_FILE,
)

__all__ = [
    # handled by the agent
    "AUTHENTICATE",
    "CANCEL",
    "CLOSE_SESSION",
    "DELETE_SESSION",
    "INITIALIZE",
    "LIST_SESSIONS",
    "LOAD_SESSION",
    "LOGOUT",
    "NEW_SESSION",
    "PROMPT",
    "RESUME_SESSION",
    "SET_SESSION_CONFIG_OPTION",
    "SET_SESSION_MODE",
    # handled by the client
    "COMPLETE_ELICITATION",
    "CREATE_ELICITATION",
    "CREATE_TERMINAL",
    "KILL_TERMINAL",
    "READ_TEXT_FILE",
    "RELEASE_TERMINAL",
    "REQUEST_PERMISSION",
    "SESSION_UPDATE",
    "TERMINAL_OUTPUT",
    "WAIT_FOR_TERMINAL_EXIT",
    "WRITE_TEXT_FILE",
]
