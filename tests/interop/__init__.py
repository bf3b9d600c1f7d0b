"""Interop tests against the official ACP SDKs (installed at test time)."""
