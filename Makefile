# xrxe: a software RoCEv2 endpoint (XDP steering, AF_XDP transport daemon, verbs shim).
#
#   make            build everything into build/
#   make SANITIZE=1 build with AddressSanitizer + UndefinedBehaviorSanitizer (into build-san/)
#   make deps       install the Debian packages the build, tests and demo need
#   make test       every suite (unit, net, interop, fuzz smoke); one summary line at the end
#   make demo       two namespaces, XDP steering and the I/O layer, live
#   make bench      benchmarks, printed as a table
#   make fuzz       the libFuzzer targets, FUZZ_SECONDS each (default 600)
#   make bench-cc   congestion-control experiments (tests/cc/), CC off and on; plots in docs/cc/
#   make bench-loss goodput under random loss (tests/bench/loss.sh), ratio to 0 % loss
#   make install    install into $(DESTDIR)$(PREFIX)
#   make man        man pages into build/man/, made from the programs' --help
#   make deb        the Debian package into build/deb/ (dpkg-buildpackage, lintian)
#   make test-deb   install it into a clean Debian 12 root, run it, purge (slow)

PREFIX ?= /usr/local
DESTDIR ?=

CC := gcc
CLANG ?= clang
BPFTOOL ?= bpftool

ifeq ($(SANITIZE),1)
BUILD ?= build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD ?= build
SAN_FLAGS :=
endif

OPT ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
	-Wno-missing-field-initializers
CFLAGS_ALL := -std=gnu11 $(OPT) $(WARN) $(SAN_FLAGS) -D_GNU_SOURCE -fPIC \
	-Iinclude -Isrc -I$(BUILD)/gen $(CFLAGS)
LDFLAGS_ALL := $(SAN_FLAGS) $(LDFLAGS)

LIBS_WIRE := -lisal
LIBS_DAEMON := -lxdp -lbpf -lelf -lz -lmnl

# --- BPF ---------------------------------------------------------------------
# Debian keeps asm/ under the multiarch path, which clang -target bpf does not
# search (docs/facts/afxdp.md pitfall 14).
ARCH_INC := /usr/include/$(shell $(CC) -print-multiarch)
BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -Iinclude -I$(ARCH_INC)
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/gen/%.skel.h,$(BPF_SRCS))

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c include/xrxe/*.h | $(BUILD)/bpf
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o | $(BUILD)/gen
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@.tmp && mv $@.tmp $@

# --- C libraries -------------------------------------------------------------
WIRE_SRCS := $(wildcard src/wire/*.c)
UTIL_SRCS := $(wildcard src/util/*.c)
DAEMON_MAIN := src/daemon/xrxed.c
DAEMON_SRCS := $(filter-out $(DAEMON_MAIN),$(wildcard src/daemon/*.c))
TRANSPORT_SRCS := $(wildcard src/transport/*.c)
CM_SRCS := $(wildcard src/cm/*.c)
TOOL_SRCS := $(wildcard tools/*.c)
IMPAIR_SRCS := $(wildcard tools/impair/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIB_WIRE := $(BUILD)/lib/libxrxe_wire.a
LIB_TRANSPORT := $(BUILD)/lib/libxrxe_transport.a
LIB_DAEMON := $(BUILD)/lib/libxrxe_daemon.a
LIB_CM := $(BUILD)/lib/libxrxe_cm.a

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# Only the loader and the tools include the generated skeleton.
$(call obj,$(DAEMON_SRCS) $(DAEMON_MAIN) $(TOOL_SRCS) $(IMPAIR_SRCS)): | $(BPF_SKELS)

$(LIB_WIRE): $(call obj,$(WIRE_SRCS) $(UTIL_SRCS))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIB_TRANSPORT): $(call obj,$(TRANSPORT_SRCS))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# The connection manager (sans-I/O, like the transport): src/cm/.
$(LIB_CM): $(call obj,$(CM_SRCS))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIB_DAEMON): $(call obj,$(DAEMON_SRCS))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# --- Programs ----------------------------------------------------------------
BINS :=
ifneq ($(wildcard $(DAEMON_MAIN)),)
BINS += $(BUILD)/bin/xrxed
$(BUILD)/bin/xrxed: $(call obj,$(DAEMON_MAIN)) $(LIB_DAEMON) $(LIB_CM) $(LIB_TRANSPORT) $(LIB_WIRE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_DAEMON) $(LIBS_WIRE)
endif
ifneq ($(TOOL_SRCS),)
BINS += $(BUILD)/bin/xrxe
# xrxe cc takes parameter names and ranges from the transport's table.
$(BUILD)/bin/xrxe: $(call obj,$(TOOL_SRCS)) $(LIB_DAEMON) $(LIB_CM) $(LIB_TRANSPORT) $(LIB_WIRE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_DAEMON) $(LIBS_WIRE)
endif
# xrxe-impair: the tc loss/duplication/corruption/ECN emulator (standalone, for
# test and bench topologies; tools/impair/, bpf/xrxe_impair.bpf.c).
ifneq ($(IMPAIR_SRCS),)
BINS += $(BUILD)/bin/xrxe-impair
$(BUILD)/bin/xrxe-impair: $(call obj,$(IMPAIR_SRCS)) $(LIB_DAEMON) $(LIB_WIRE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lbpf -lelf -lz -lmnl
endif

# The verbs shim (libibverbs.so.1): its own flags and version script.
include mk/verbs.mk
# The RDMA CM shim (librdmacm.so.1), beside it.
-include mk/rdmacm.mk

# --- Tests -------------------------------------------------------------------
# tests/unit/test_*.c: one criterion binary each.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
UNIT_HELPERS := $(filter-out $(UNIT_SRCS),$(wildcard tests/unit/*.c))
# Unit tests cover the sans-I/O layers (wire, transport, cm): they never link the daemon.
$(BUILD)/tests/unit/%: $(call obj,tests/unit/%.c $(UNIT_HELPERS)) $(LIB_CM) $(LIB_TRANSPORT) $(LIB_WIRE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcriterion -lpcap -lz $(LIBS_WIRE)
# ...except the daemon's ring slab allocator, which is sans-I/O enough to test alone.
$(BUILD)/tests/unit/test_ring_slab: $(call obj,src/daemon/ring_slab.c src/daemon/shm.c)
# ...and its event dispatch (a batch whose callbacks free other sources).
$(BUILD)/tests/unit/test_evsrc: $(call obj,src/daemon/evsrc.c)

# tests/net/*.c: helper programs the network tests drive.
NET_SRCS := $(wildcard tests/net/*.c)
NET_BINS := $(patsubst tests/net/%.c,$(BUILD)/tests/net/%,$(NET_SRCS))
$(BUILD)/tests/net/%: $(call obj,tests/net/%.c) $(LIB_DAEMON) $(LIB_CM) $(LIB_WIRE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lpcap $(LIBS_DAEMON) $(LIBS_WIRE)

# tests/verbs/*.c: programs written against plain libibverbs; they run on the
# shim (xrxe run) and, unchanged, on rdma-core with kernel rxe (interop).
VERBS_TEST_SRCS := $(wildcard tests/verbs/*.c)
VERBS_TEST_BINS := $(patsubst tests/verbs/%.c,$(BUILD)/tests/verbs/%,$(VERBS_TEST_SRCS))
$(BUILD)/tests/verbs/%: $(call obj,tests/verbs/%.c)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -libverbs

# tests/bench/*.c
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/tests/bench/%,$(BENCH_SRCS))
$(BUILD)/tests/bench/%: $(call obj,tests/bench/%.c) $(LIB_DAEMON) $(LIB_WIRE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lz $(LIBS_DAEMON) $(LIBS_WIRE)

# tests/fuzz/fuzz_*.c: libFuzzer targets, always clang + ASan/UBSan, own objects.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/tests/fuzz/%,$(FUZZ_SRCS))
FUZZ_FLAGS := -std=gnu11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -Iinclude -Isrc
# Of src/cm only the MAD codec: it is pure, the rest of the CM needs the transport.
FUZZ_CM_SRCS := src/cm/mad.c
$(BUILD)/tests/fuzz/%: tests/fuzz/%.c $(WIRE_SRCS) $(UTIL_SRCS) $(FUZZ_CM_SRCS) include/xrxe/*.h src/cm/mad.h
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_FLAGS) -o $@ $< $(WIRE_SRCS) $(UTIL_SRCS) $(FUZZ_CM_SRCS) -lisal

# The transport's receive path with live QPs: the core and the unit tests'
# two-endpoint harness (tests/unit/tp_harness.c).
FUZZ_TP_SRCS := $(TRANSPORT_SRCS) tests/unit/tp_harness.c
$(BUILD)/tests/fuzz/fuzz_transport_rx: tests/fuzz/fuzz_transport_rx.c $(WIRE_SRCS) $(UTIL_SRCS) \
		$(FUZZ_TP_SRCS) include/xrxe/*.h src/transport/*.h tests/unit/tp_harness.h
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_FLAGS) -Itests/unit -o $@ $< $(WIRE_SRCS) $(UTIL_SRCS) $(FUZZ_TP_SRCS) -lisal

# The control socket (fuzz_ctrl): the daemon's control side without its
# AF_XDP I/O, over a real transport core, CM and rtnetlink.
FUZZ_CTRL_SRCS := $(filter-out src/daemon/steer.c src/daemon/xsk_io.c src/daemon/bpf_log.c \
	src/daemon/netdev.c src/daemon/xrxed%,$(DAEMON_SRCS)) $(TRANSPORT_SRCS) $(CM_SRCS)
$(BUILD)/tests/fuzz/fuzz_ctrl: tests/fuzz/fuzz_ctrl.c $(WIRE_SRCS) $(UTIL_SRCS) $(FUZZ_CTRL_SRCS) \
		include/xrxe/*.h src/daemon/*.h src/transport/*.h src/cm/*.h
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_FLAGS) -o $@ $< $(WIRE_SRCS) $(UTIL_SRCS) $(FUZZ_CTRL_SRCS) -lisal -lmnl

TEST_BINS := $(UNIT_BINS) $(NET_BINS) $(VERBS_TEST_BINS) $(FUZZ_BINS)

# --- Top-level targets -------------------------------------------------------
.PHONY: all deps check-deps unit-tests test test-unit test-net test-interop test-fuzz demo bench bench-cc bench-loss install clean
.PHONY: man deb test-deb fuzz
.DEFAULT_GOAL := all

all: $(BPF_OBJS) $(BPF_SKELS) $(BINS) $(LIB_WIRE)

# (the man pages too: tests/unit/man_pages.sh checks them against --help)
tests: all $(TEST_BINS) man

deps:
	scripts/deps.sh install

# Install what is missing first, so a fresh Debian 12 machine needs nothing else typed.
check-deps:
	@scripts/deps.sh ensure

# The unit suites run a second time built with ASan + UBSan (suite "sanitize").
# The builds use every core unless make was given -j already (CI runs a bare
# `make test`; a serial build cost minutes of its time).
TEST_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))
test: check-deps
	@$(MAKE) --no-print-directory $(TEST_JOBS) tests man
	@$(MAKE) --no-print-directory $(TEST_JOBS) SANITIZE=1 unit-tests
	@BUILD=$(BUILD) tests/run.sh

unit-tests: $(UNIT_BINS)

# One suite: make test-unit | test-net | test-interop | test-fuzz. (Explicit
# targets: make applies no pattern rule to a .PHONY target.)
SUITE_TARGETS := test-unit test-net test-interop test-fuzz
$(SUITE_TARGETS): check-deps
	@$(MAKE) --no-print-directory $(TEST_JOBS) tests
	@BUILD=$(BUILD) tests/run.sh $(@:test-%=%)

# Every libFuzzer target for FUZZ_SECONDS each (default 600), one after the
# other; make test runs them for 20 s each (tests/run.sh "fuzz").
fuzz: check-deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@FUZZ_SECONDS=$(or $(FUZZ_SECONDS),600) BUILD=$(BUILD) tests/run.sh fuzz

demo: check-deps
	@$(MAKE) --no-print-directory all $(NET_BINS)
	@BUILD=$(BUILD) scripts/demo.sh

bench: check-deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(NET_BINS)
	@BUILD=$(BUILD) tests/bench/run.sh

# Not part of `make test`: minutes of traffic whose numbers depend on the
# machine's load. CC_EXPERIMENTS="E1 E4" runs a subset (tests/cc/run.sh).
bench-cc: check-deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) tests/cc/run.sh $(CC_EXPERIMENTS)

# Not part of `make test` either: perftest under 0-2 % loss through a router
# namespace (tests/bench/loss.sh; LOSS_DURATION, LOSS_RATES, LOSS_XRXED_OPTS).
bench-loss: check-deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) tests/bench/loss.sh

# Man pages from the --help text (scripts/mkman.sh), so they cannot drift;
# tests/unit/man_pages.sh checks they agree.
MAN_PAGES := $(BUILD)/man/xrxe.8 $(BUILD)/man/xrxed.8 $(BUILD)/man/xrxe-impair.8 $(BUILD)/man/xrxe.7
man: $(MAN_PAGES)
$(MAN_PAGES) &: $(BINS) man/xrxe.7.txt scripts/mkman.sh scripts/mkman.py
	scripts/mkman.sh $(BUILD) $(BUILD)/man

# Install layout; a package sets them (debian/rules): the shims and BPF
# objects under LIBDIR/xrxe (never beside rdma-core's libraries), the unit
# in SYSTEMD_UNIT_DIR. SHIM_DIR makes `xrxe run` look there instead of next
# to its binary.
LIBDIR ?= $(PREFIX)/lib
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
ifdef SHIM_DIR
$(call obj,tools/cmd_run.c): CFLAGS_ALL += -DXRXE_SHIM_DIR_DEFAULT='"$(SHIM_DIR)"'
endif

install: all man
	install -d $(DESTDIR)$(LIBDIR)/xrxe/bpf $(DESTDIR)$(SYSTEMD_UNIT_DIR) \
		$(DESTDIR)$(PREFIX)/share/doc/xrxe/examples
	install -m 0644 $(BPF_OBJS) $(DESTDIR)$(LIBDIR)/xrxe/bpf/
	sed -e 's|/usr/sbin/|$(PREFIX)/sbin/|g; s|/usr/bin/xrxe |$(PREFIX)/bin/xrxe |g' \
		systemd/xrxed@.service >$(DESTDIR)$(SYSTEMD_UNIT_DIR)/xrxed@.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/xrxed@.service
	install -m 0644 systemd/netns.conf $(DESTDIR)$(PREFIX)/share/doc/xrxe/examples/netns.conf
	sed -e 's|/usr/bin/xrxe |$(PREFIX)/bin/xrxe |g' systemd/nonroot.conf \
		>$(DESTDIR)$(PREFIX)/share/doc/xrxe/examples/nonroot.conf
	chmod 0644 $(DESTDIR)$(PREFIX)/share/doc/xrxe/examples/nonroot.conf
	install -d $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 $(BUILD)/man/xrxe.7 $(DESTDIR)$(PREFIX)/share/man/man7/xrxe.7
	install -m 0644 $(BUILD)/man/xrxe.8 $(BUILD)/man/xrxed.8 $(BUILD)/man/xrxe-impair.8 \
		$(DESTDIR)$(PREFIX)/share/man/man8/
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin
	install -m 0755 $(BUILD)/bin/xrxe $(DESTDIR)$(PREFIX)/bin/xrxe
	install -m 0755 $(BUILD)/bin/xrxed $(DESTDIR)$(PREFIX)/sbin/xrxed
	install -m 0755 $(BUILD)/bin/xrxe-impair $(DESTDIR)$(PREFIX)/sbin/xrxe-impair
	install -D -m 0644 $(BUILD)/lib/xrxe/libibverbs.so.1 $(DESTDIR)$(LIBDIR)/xrxe/libibverbs.so.1
	install -D -m 0644 $(BUILD)/lib/xrxe/librdmacm.so.1 $(DESTDIR)$(LIBDIR)/xrxe/librdmacm.so.1

# The Debian package (debian/), built in a copy of the tree under
# $(BUILD)/deb/ so that this tree's build/ is left alone.
deb: check-deps
	@scripts/deps.sh ensure deb
	@scripts/mkdeb.sh $(BUILD)

# Not part of `make test`: mmdebstrap and Debian's mirror, minutes.
test-deb: deb all $(NET_BINS)
	@BUILD=$(BUILD) tests/deb/install.sh

clean:
	rm -rf build build-san

$(BUILD)/bpf $(BUILD)/gen:
	@mkdir -p $@

# Keep objects of pattern-built test programs (make would delete them as intermediates).
.SECONDARY:

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
