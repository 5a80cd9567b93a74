"""The reproduction work before TIPC: reprod_log alignment, checkpoint reading, weight conversion, layer tracing."""
