"""interlink: ACP v1 and A2A 1.0 on one strict, fast JSON-RPC 2.0 core."""

__version__ = "0.1.0"
