# SPDX-License-Identifier: GPL-2.0-or-later
"""wbbench: a real-kernel writeback testbed for wbtuned (stdlib only)."""
