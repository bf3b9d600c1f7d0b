"""The protocol bindings of the A2A server: thin translations over `_calls`."""
