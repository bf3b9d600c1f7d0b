"""The protobuf side of the A2A gRPC binding (`interlink[grpc]`).

The only place protobuf enters interlink: the server binding
(`interlink.a2a.server.bindings._grpc`) and the client transport
(`interlink.a2a.client._grpc`) import it, nothing else does, so `import interlink.a2a`
and the HTTP bindings run without grpcio or protobuf installed. `a2a_pb2` is generated
(`tools/gen_a2a_grpc.py`); `_convert` turns its messages into the msgspec types of
`interlink.a2a` and back, and builds the `google.rpc.Status` of an error.
"""
