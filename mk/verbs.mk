# The verbs shim: a drop-in libibverbs.so.1 (src/verbs/, docs/verbs-shim.md).
# Included by the top-level Makefile; uses its BUILD, CC, CFLAGS_ALL,
# LDFLAGS_ALL and obj. Standalone:
#   make -f Makefile -f mk/verbs.mk build/lib/xrxe/libibverbs.so.1
#
# The library lives in a directory of its own so that LD_LIBRARY_PATH=
# $(BUILD)/lib/xrxe swaps it in for rdma-core's without shadowing anything else.

VERBS_SRCS := $(wildcard src/verbs/*.c)
VERBS_OBJS := $(call obj,$(VERBS_SRCS))
# src/shim/: logging and the control-connection client the two shims share,
# compiled into an object of this library's own so that its log lines carry
# its name (XRXE_SHIM_LIB).
VERBS_OBJS += $(BUILD)/obj/shim/libibverbs/ctrl.o
$(BUILD)/obj/shim/libibverbs/%.o: src/shim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DXRXE_SHIM_LIB='"libibverbs"' -MMD -MP -c $< -o $@
VERBS_MAP := src/verbs/libibverbs.map
VERBS_LIB := $(BUILD)/lib/xrxe/libibverbs.so.1

# Hidden by default: only what the version script names is exported.
# No sanitizers in the shim: it is loaded into uninstrumented programs
# (perftest, ibv_*), where an ASan runtime cannot come first; the remap
# logic is exercised under ASan by tests/net/mr_remap_test instead.
$(VERBS_OBJS): CFLAGS_ALL := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS_ALL)) \
	-fvisibility=hidden

$(VERBS_LIB): $(VERBS_OBJS) $(VERBS_MAP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize=%,$(LDFLAGS_ALL)) -shared -Wl,-soname,libibverbs.so.1 \
		-Wl,--version-script=$(VERBS_MAP) -Wl,-z,defs -Wl,-z,now -Wl,-z,noexecstack \
		-o $@ $(VERBS_OBJS) -lpthread

all: $(VERBS_LIB)
tests: $(VERBS_LIB)
