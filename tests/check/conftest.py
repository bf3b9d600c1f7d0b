"""The SDK peers' fixtures (tests/interop) for the checker's tests."""

from tests.interop.conftest import py_sdk, ts_sdk

__all__ = ["py_sdk", "ts_sdk"]
