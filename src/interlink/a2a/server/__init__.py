"""The A2A server: the binding-neutral request handler (`_handler`), its runtime and bindings."""
