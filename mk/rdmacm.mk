# The RDMA CM shim: a drop-in librdmacm.so.1 (src/rdmacm/, docs/rdmacm-shim.md).
# Included by the top-level Makefile after mk/verbs.mk; uses its BUILD, CC,
# CFLAGS_ALL, LDFLAGS_ALL and obj. Standalone:
#   make -f Makefile -f mk/rdmacm.mk build/lib/xrxe/librdmacm.so.1
#
# It sits beside the verbs shim in $(BUILD)/lib/xrxe, so the LD_LIBRARY_PATH
# that `xrxe run` sets swaps in both. It links against libibverbs.so.1 (NEEDED)
# and reaches devices through the public verbs API only; at run time that is
# the verbs shim.

RDMACM_SRCS := $(wildcard src/rdmacm/*.c)
RDMACM_OBJS := $(call obj,$(RDMACM_SRCS))
# src/shim/: logging and the control-connection client the two shims share,
# compiled into an object of this library's own so that its log lines carry
# its name (XRXE_SHIM_LIB).
RDMACM_OBJS += $(BUILD)/obj/shim/librdmacm/ctrl.o
$(BUILD)/obj/shim/librdmacm/%.o: src/shim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DXRXE_SHIM_LIB='"librdmacm"' -MMD -MP -c $< -o $@
RDMACM_MAP := src/rdmacm/librdmacm.map
RDMACM_LIB := $(BUILD)/lib/xrxe/librdmacm.so.1

# Hidden by default: only what the version script names is exported. No
# sanitizers, for the verbs shim's reason: it is loaded into uninstrumented
# programs (rping, perftest, libfabric), where an ASan runtime cannot come first.
$(RDMACM_OBJS): CFLAGS_ALL := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS_ALL)) \
	-fvisibility=hidden

$(RDMACM_LIB): $(RDMACM_OBJS) $(RDMACM_MAP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize=%,$(LDFLAGS_ALL)) -shared -Wl,-soname,librdmacm.so.1 \
		-Wl,--version-script=$(RDMACM_MAP) -Wl,-z,defs -Wl,-z,now -Wl,-z,noexecstack \
		-o $@ $(RDMACM_OBJS) -libverbs -lpthread

all: $(RDMACM_LIB)
tests: $(RDMACM_LIB)

# tests/rdmacm/*.c: programs written against plain librdmacm + libibverbs
# (rdma-core's headers); they run on the shims through `xrxe run`.
RDMACM_TEST_SRCS := $(wildcard tests/rdmacm/*.c)
RDMACM_TEST_BINS := $(patsubst tests/rdmacm/%.c,$(BUILD)/tests/rdmacm/%,$(RDMACM_TEST_SRCS))
$(BUILD)/tests/rdmacm/%: $(call obj,tests/rdmacm/%.c)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lrdmacm -libverbs -lpthread

tests: $(RDMACM_TEST_BINS)

# tests/rdmacm/preload/*.c: LD_PRELOAD libraries a test puts in front of the
# shims to force an order of events (no sanitizers: loaded into stock
# programs).
RDMACM_PRELOAD_SRCS := $(wildcard tests/rdmacm/preload/*.c)
RDMACM_PRELOAD_LIBS := $(patsubst tests/rdmacm/preload/%.c,$(BUILD)/tests/rdmacm/%.so,$(RDMACM_PRELOAD_SRCS))
$(BUILD)/tests/rdmacm/%.so: tests/rdmacm/preload/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS_ALL)) -fPIC -shared \
		-o $@ $< -ldl

tests: $(RDMACM_PRELOAD_LIBS)
