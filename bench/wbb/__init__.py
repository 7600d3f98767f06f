"""wbbench: a real-kernel writeback testbed for wbtuned (stdlib only)."""
