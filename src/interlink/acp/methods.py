"""Typed descriptors of the stable ACP v1 methods, for registering handlers:

    agent = Agent()

    @agent.on(methods.PROMPT)
    async def prompt(params: s.PromptRequest) -> s.PromptResponse: ...

Each is a `RequestType[Params, Result]` or `NotificationType[Params]`, so a handler of the
wrong shape is a type error.
"""

from __future__ import annotations

from interlink.acp import _schema as s
from interlink.jsonrpc import NotificationType, RequestType

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

INITIALIZE = RequestType("initialize", s.InitializeRequest, s.InitializeResponse)
AUTHENTICATE = RequestType("authenticate", s.AuthenticateRequest, s.AuthenticateResponse)
LOGOUT = RequestType("logout", s.LogoutRequest, s.LogoutResponse)
NEW_SESSION = RequestType("session/new", s.NewSessionRequest, s.NewSessionResponse)
LOAD_SESSION = RequestType("session/load", s.LoadSessionRequest, s.LoadSessionResponse)
RESUME_SESSION = RequestType("session/resume", s.ResumeSessionRequest, s.ResumeSessionResponse)
LIST_SESSIONS = RequestType("session/list", s.ListSessionsRequest, s.ListSessionsResponse)
DELETE_SESSION = RequestType("session/delete", s.DeleteSessionRequest, s.DeleteSessionResponse)
CLOSE_SESSION = RequestType("session/close", s.CloseSessionRequest, s.CloseSessionResponse)
SET_SESSION_MODE = RequestType(
    "session/set_mode", s.SetSessionModeRequest, s.SetSessionModeResponse
)
SET_SESSION_CONFIG_OPTION: RequestType[
    s.SetSessionConfigOptionRequest, s.SetSessionConfigOptionResponse
] = RequestType(
    "session/set_config_option",
    s.SetSessionConfigOptionRequest,  # type: ignore[arg-type]
    s.SetSessionConfigOptionResponse,
)
PROMPT = RequestType("session/prompt", s.PromptRequest, s.PromptResponse)
CANCEL = NotificationType("session/cancel", s.CancelNotification)

SESSION_UPDATE = NotificationType("session/update", s.SessionNotification)
REQUEST_PERMISSION = RequestType(
    "session/request_permission", s.RequestPermissionRequest, s.RequestPermissionResponse
)
READ_TEXT_FILE = RequestType("fs/read_text_file", s.ReadTextFileRequest, s.ReadTextFileResponse)
WRITE_TEXT_FILE = RequestType("fs/write_text_file", s.WriteTextFileRequest, s.WriteTextFileResponse)
CREATE_TERMINAL = RequestType("terminal/create", s.CreateTerminalRequest, s.CreateTerminalResponse)
TERMINAL_OUTPUT = RequestType("terminal/output", s.TerminalOutputRequest, s.TerminalOutputResponse)
WAIT_FOR_TERMINAL_EXIT = RequestType(
    "terminal/wait_for_exit", s.WaitForTerminalExitRequest, s.WaitForTerminalExitResponse
)
KILL_TERMINAL = RequestType("terminal/kill", s.KillTerminalRequest, s.KillTerminalResponse)
RELEASE_TERMINAL = RequestType(
    "terminal/release", s.ReleaseTerminalRequest, s.ReleaseTerminalResponse
)
CREATE_ELICITATION: RequestType[s.CreateElicitationRequest, s.CreateElicitationResponse] = (
    RequestType(
        "elicitation/create",
        s.CreateElicitationRequest,  # type: ignore[arg-type]
        s.CreateElicitationResponse,  # type: ignore[arg-type]
    )
)
COMPLETE_ELICITATION = NotificationType("elicitation/complete", s.CompleteElicitationNotification)
