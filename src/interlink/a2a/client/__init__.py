"""The A2A client and its transports."""
