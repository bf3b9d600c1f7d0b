"""ACP v1 (Agent Client Protocol): generated schema types, method table and codec."""
