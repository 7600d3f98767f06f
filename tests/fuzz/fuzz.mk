# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer harnesses with clang: every tests/fuzz/fuzz-*.c is one harness, linked against
# every src/*/*.c but the two mains and tests/jsonc-strict-018.c (json-c 0.18's strict mode), all built
# with ASan+UBSan and fuzzer coverage, each folder with the include path Makefile.am gives it. Invoked
# by the fuzz targets of Makefile.am (GNU make), which pass srcdir, O and the flags configure found.
CLANG ?= clang
O ?= fuzz-build
FUZZ_CFLAGS ?= -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
BASE_CFLAGS = -std=gnu11 $(FUZZ_WARN_CFLAGS) $(FUZZ_CFLAGS) $(FUZZ_CPPFLAGS) $(FUZZ_DEPS_CFLAGS)
SHARED_CFLAGS = $(BASE_CFLAGS) -I$(srcdir)/src/shared
CTL_CFLAGS = $(SHARED_CFLAGS) -I$(srcdir)/src/ctl
DAEMON_CFLAGS = $(SHARED_CFLAGS) -I$(srcdir)/src/daemon
ALL_CFLAGS = $(SHARED_CFLAGS) -I$(srcdir)/src/ctl -I$(srcdir)/src/daemon

LIB_SRC := $(filter-out $(srcdir)/src/daemon/wbtuned.c $(srcdir)/src/ctl/wbtunectl.c,$(wildcard $(srcdir)/src/*/*.c))
LIB_OBJ := $(patsubst $(srcdir)/src/%.c,$(O)/obj/%.o,$(LIB_SRC))
HARNESSES := $(patsubst $(srcdir)/tests/fuzz/%.c,$(O)/%,$(wildcard $(srcdir)/tests/fuzz/fuzz-*.c))

all: $(HARNESSES)

$(O)/obj/shared/%.o: $(srcdir)/src/shared/%.c
	@mkdir -p $(@D)
	$(CLANG) $(SHARED_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(O)/obj/ctl/%.o: $(srcdir)/src/ctl/%.c
	@mkdir -p $(@D)
	$(CLANG) $(CTL_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(O)/obj/daemon/%.o: $(srcdir)/src/daemon/%.c
	@mkdir -p $(@D)
	$(CLANG) $(DAEMON_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(O)/libfuzz.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

# every harness gets json-c 0.18's strict mode whatever json-c this is (tests/jsonc-strict-018.c)
JSONC_STRICT_018 = $(srcdir)/tests/jsonc-strict-018.c -Wl,--wrap=json_tokener_parse_ex

$(O)/fuzz-%: $(srcdir)/tests/fuzz/fuzz-%.c $(O)/libfuzz.a $(srcdir)/tests/jsonc-strict-018.c
	$(CLANG) $(ALL_CFLAGS) -I$(srcdir)/tests/fuzz -fsanitize=fuzzer -MMD -MP $< $(JSONC_STRICT_018) $(O)/libfuzz.a $(FUZZ_DEPS_LIBS) -o $@

.PHONY: all
-include $(LIB_OBJ:.o=.d) $(HARNESSES:=.d)
