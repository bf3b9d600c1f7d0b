"""A2A 1.0 (Agent2Agent): generated ProtoJSON types, method table and codec.

The public face of this package is not settled yet; import from the private modules
(`interlink.a2a._types`, `interlink.a2a._methods`, `interlink.a2a._codec`) meanwhile.
"""
