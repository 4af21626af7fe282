# gpuagg — plain Makefile.  `make`, `make run`, `make test`, `make install`.
#
# Layout: every .c under proto/ gpu/ storage/ daemon/ (but daemon/main.c) goes
# into build/libgpuagg.a; binaries link it.  CUDA is optional: with nvcc on
# PATH or in /usr/local/cuda, gpu/cuda/*.cu are built for sm_90 (SASS + PTX)
# and linked with the static CUDA runtime; without it gpu/nocuda/*.c give the
# same interfaces answering "no CUDA support".  `make CUDA=0` forces CPU-only.

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
SAN     ?= 0

CC      ?= cc
PKGS    := libuv msgpack libpq yaml-0.1 libmicrohttpd jansson libnats uuid nettle libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
ifeq ($(NVCC),)
CUDA ?= 0
else
CUDA ?= 1
endif
ifneq ($(SAN),0)
CUDA := 0
endif

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -pthread -fno-strict-aliasing $(WARN) -MMD -MP \
           -I. -DGA_VERSION='"$(VERSION)"' -DGA_HAVE_CUDA=$(CUDA) $(PKG_CFLAGS)
LDLIBS  += $(PKG_LIBS) -lm -lpthread
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# SAN=thread: ThreadSanitizer, for the suites whose code runs on several
# threads of its own (the engine's split, feeder and their helpers).
ifeq ($(SAN),thread)
CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
endif
TSAN_TESTS := $(addprefix build-tsan/tests/,test_engine_pipeline test_engine_failover test_engine_multi test_pg_writer)

# gpu/jobs/X/: a job kind's kernels.  X.c is the CPU reference (always
# built), X_gpu.cu the CUDA version (CUDA=1), X_nocuda.c its stand-in
# answering ENOGPU (CUDA=0); gpu/jobs/*.c the helpers they share.  Its job
# glue is daemon/jobs/X_rpc.c (daemon/jobs/kind.h).  A .c and a .cu must not
# share a stem: both would be X.o.
LIB_SRC := $(wildcard proto/*.c proto/base/*.c gpu/*.c storage/*.c) $(filter-out daemon/main.c,$(wildcard daemon/*.c daemon/*/*.c)) \
           $(filter-out %_nocuda.c,$(wildcard gpu/jobs/*.c gpu/jobs/*/*.c))
# Generated at build time: the schema migrations storage/sql/NNNN_*.sql as
# C strings (pg_schema_migrations[], storage/pg_schema.h).  The folder is a
# prerequisite too, so that adding or removing a file regenerates it.
MIGRATIONS := $(sort $(wildcard storage/sql/*.sql))
LIB_SRC += $(BUILD)/gen/migrations.c
ifeq ($(CUDA),1)
# Where the CUDA runtime lives: ask nvcc itself (its --dryrun prints the -L
# flags it would link with), since nvcc may be a wrapper script outside the
# toolkit (e.g. /usr/local/bin/nvcc -> exec /usr/local/cuda/bin/nvcc).
CUDA_LIBDIRS := $(shell $(NVCC) --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^\#\$$ LIBRARIES=//p' | tr -d '"')
CU_SRC  := $(wildcard gpu/cuda/*.cu gpu/jobs/*.cu gpu/jobs/*/*.cu)
CU_C_SRC := $(wildcard gpu/cuda/*.c)
NVFLAGS ?= -O3 -g -lineinfo
NVFLAGS += -std=c++17 -I. -Xcompiler -Wall,-Wextra,-Werror,-fPIC -Werror all-warnings -MMD -MP \
           -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
LDLIBS  += $(filter-out %/stubs,$(CUDA_LIBDIRS)) -lcudart_static -ldl -lrt -lstdc++
else
CU_SRC  :=
CU_C_SRC := $(wildcard gpu/nocuda/*.c gpu/jobs/*_nocuda.c gpu/jobs/*/*_nocuda.c)
endif

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(CU_C_SRC:%.c=$(BUILD)/obj/%.o) $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
LIB     := $(BUILD)/libgpuagg.a
# tools/bench/cuda/: the benchmarks' GPU code (kernel benchmarks, the sort and
# search checks, the job benchmarks), kept out of libgpuagg.a: its own
# archive, linked by the benchmarks and the unit tests.  Without CUDA its
# *_nocuda.c stand-ins answer GA_ENOGPU.
ifeq ($(CUDA),1)
LAB_SRC := $(wildcard tools/bench/cuda/*.cu)
else
LAB_SRC := $(wildcard tools/bench/cuda/*_nocuda.c)
endif
LAB_OBJ := $(patsubst %.cu,$(BUILD)/obj/%.o,$(LAB_SRC:%.c=$(BUILD)/obj/%.o))
LAB_LIB := $(BUILD)/libgalab.a
CTL_SRC := $(wildcard tools/gpuaggctl/*.c)
LOAD_SRC := $(wildcard tools/load/*.c)
BENCH_SRC := $(wildcard tools/bench/*.c)
BENCH_BIN := $(BENCH_SRC:tools/bench/%.c=$(BUILD)/bench/%)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BINS    := $(BUILD)/bin/gpuaggd $(BUILD)/bin/gpuaggctl $(if $(LOAD_SRC),$(BUILD)/bin/gpuagg-load)
# CUDA programs of their own for the GPU host (tools/gpu-host/*.cu): built
# here so that CI compiles them.
GPU_TOOLS := $(if $(filter 1,$(CUDA)),$(BUILD)/bench/wait_cost)

.PHONY: all run test unit asan tsan install install-ceilometer clean deps fuzz bench bench-capacity bench-cluster check-layout demo-cluster
all: $(BINS) $(TEST_BIN) $(BENCH_BIN) $(GPU_TOOLS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/gen/migrations.c: $(MIGRATIONS) storage/sql tools/gen/migrations.sh
	@mkdir -p $(@D)
	sh tools/gen/migrations.sh $(MIGRATIONS) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@
$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^
$(LAB_LIB): $(LAB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^
$(BUILD)/bin/gpuaggd: $(BUILD)/obj/daemon/main.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/bin/gpuaggctl: $(CTL_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/bin/gpuagg-load: $(LOAD_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/bench/wait_cost: tools/gpu-host/wait_cost.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -cudart static $< -o $@
# bench_capacity: its modules in tools/bench/capacity/ and gpuaggctl's
# control client.
CAP_SRC := $(wildcard tools/bench/capacity/*.c) tools/gpuaggctl/client.c
$(BUILD)/bench/bench_capacity: $(BUILD)/obj/tools/bench/bench_capacity.o $(CAP_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/bench/%: $(BUILD)/obj/tools/bench/%.o $(LAB_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(BUILD)/obj/tests/unit/harness.o $(LAB_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The two commands.  Both install missing Debian packages first.
deps:
	@tools/deps.sh
run: deps
	@$(MAKE) --no-print-directory all
	@tools/run-demo.sh
# Cluster mode on this machine: 3 nats-servers, 3 daemons, a kill -9 and the takeover.
demo-cluster: deps
	@$(MAKE) --no-print-directory all
	@/usr/bin/python3 tools/demo-cluster.py
test: deps check-layout
	@$(MAKE) --no-print-directory all
	@tools/check-layout.sh --symbols $(BUILD)/obj
	@$(MAKE) --no-print-directory SAN=1 BUILD=build-asan build-asan/tests-stamp
	@$(MAKE) --no-print-directory SAN=thread BUILD=build-tsan $(TSAN_TESTS)
	@tests/run.sh
unit: all
	@tests/run.sh unit
# No #include across a layer the wrong way (docs/LAYOUT.md); `make test`
# checks the built objects' symbols too (--symbols).
check-layout:
	@tools/check-layout.sh
asan:
	@$(MAKE) --no-print-directory SAN=1 BUILD=build-asan build-asan/tests-stamp
tsan:
	@$(MAKE) --no-print-directory SAN=thread BUILD=build-tsan $(TSAN_TESTS)
$(BUILD)/tests-stamp: $(TEST_BIN)
	@touch $@

# The capacity benchmark (docs/PERFORMANCE.md, "Capacity (socket to
# committed rows)"): the real daemon and a private PostgreSQL under
# build/bench-capacity; BENCH_ARGS overrides the workload (default: the
# 2-core goal, 100,000 metrics at 0.5 points/s, policy medium, 2 minutes).
BENCH_ARGS ?= --metrics 100000 --interval 2s --policy medium --duration 120 --backend cpu
bench-capacity: all
	$(BUILD)/bench/bench_capacity --out $(BUILD)/bench-capacity $(BENCH_ARGS)

# The cluster benchmark (tools/bench/bench_cluster.py): one daemon in
# cluster mode against N on 3 nats-servers and a private PostgreSQL under
# build/bench-cluster, with a kill -9 of one of the N; CLUSTER_ARGS
# overrides the workload (default: a size this 2-core machine holds).
CLUSTER_ARGS ?= --metrics 20000 --interval 2s --duration 60 --daemons 2 --backend cpu
bench-cluster: all
	/usr/bin/python3 tools/bench/bench_cluster.py --out $(BUILD)/bench-cluster $(CLUSTER_ARGS)

# The Ceilometer publisher plugin (tools/ceilometer/): the package and a
# dist-info whose entry_points.txt registers `gpuagg` on
# ceilometer.sample.publisher, in a directory on Debian's python3 path
# (/usr/lib/python3/dist-packages for PREFIX=/usr, else
# PREFIX/lib/python3.X/dist-packages).
PYSITE ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python3.$(shell /usr/bin/python3 -c 'import sys; print(sys.version_info[1])' 2>/dev/null || echo 11)/dist-packages)
CEILO_DIST := $(DESTDIR)$(PYSITE)/gpuagg_ceilometer-$(VERSION).dist-info
install-ceilometer:
	install -d $(DESTDIR)$(PYSITE)/gpuagg_ceilometer $(CEILO_DIST)
	install -m 0644 tools/ceilometer/gpuagg_ceilometer/*.py $(DESTDIR)$(PYSITE)/gpuagg_ceilometer/
	printf 'Metadata-Version: 2.1\nName: gpuagg-ceilometer\nVersion: $(VERSION)\nSummary: Ceilometer sample publisher for gpuaggd (gpuagg:// URLs)\nRequires-Dist: msgpack\n' > $(CEILO_DIST)/METADATA
	printf '[ceilometer.sample.publisher]\ngpuagg = gpuagg_ceilometer.publisher:GpuaggPublisher\n' > $(CEILO_DIST)/entry_points.txt
	printf 'gpuagg_ceilometer\n' > $(CEILO_DIST)/top_level.txt
	printf 'make\n' > $(CEILO_DIST)/INSTALLER

# Installation (docs/LAYOUT.md "Installing and packaging").  FHS places
# under PREFIX, each overridable: the daemon in sbin, the commands in bin.
# The config directory is /etc/gpuagg whatever PREFIX is (the compiled-in
# default gpuaggd reads); the systemd unit and the sysusers.d entry go where
# systemd's pkg-config file says, with its prefix replaced by PREFIX for a
# prefix other than /usr (/usr/local/lib/systemd/system, which systemd also
# reads).  The unit's paths are rewritten to SBINDIR and CONFDIR on the way.
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/gpuagg
SYSCONFDIR ?= /etc
CONFDIR    ?= $(SYSCONFDIR)/gpuagg
SYSTEMD_PC = pkg-config $(if $(filter /usr,$(PREFIX)),,--define-variable=prefix=$(PREFIX) \
             --define-variable=root_prefix=$(PREFIX) --define-variable=rootprefix=$(PREFIX)) systemd
SYSTEMDUNITDIR ?= $(or $(shell $(SYSTEMD_PC) --variable=systemdsystemunitdir 2>/dev/null),$(PREFIX)/lib/systemd/system)
SYSUSERSDIR    ?= $(or $(shell $(SYSTEMD_PC) --variable=sysusersdir 2>/dev/null),$(PREFIX)/lib/sysusers.d)
.PHONY: uninstall uninstall-ceilometer deb

# The config is never overwritten: an existing gpuaggd.yaml that differs
# from etc/gpuaggd.yaml stays, and the shipped one is put beside it as
# gpuaggd.yaml.dist.
install: $(BINS) install-ceilometer
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1 \
	        $(DESTDIR)$(CONFDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(DATADIR)/grafana
	install -m 0755 $(BUILD)/bin/gpuaggd $(DESTDIR)$(SBINDIR)/
	install -m 0755 $(filter-out $(BUILD)/bin/gpuaggd,$(BINS)) $(DESTDIR)$(BINDIR)/
	install -m 0644 docs/gpuaggd.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 docs/gpuaggctl.1 docs/gpuagg-load.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 etc/grafana/gpuagg.json $(DESTDIR)$(DATADIR)/grafana/
	@conf=$(DESTDIR)$(CONFDIR)/gpuaggd.yaml; \
	if [ -e "$$conf" ] && ! cmp -s etc/gpuaggd.yaml "$$conf"; then \
	    echo "install -m 0644 etc/gpuaggd.yaml $$conf.dist"; install -m 0644 etc/gpuaggd.yaml "$$conf.dist" && \
	    echo "install: $$conf differs from etc/gpuaggd.yaml and is kept; the shipped config is $$conf.dist"; \
	else echo "install -m 0644 etc/gpuaggd.yaml $$conf"; install -m 0644 etc/gpuaggd.yaml "$$conf"; fi
	sed -e 's|/usr/local/sbin/gpuaggd|$(SBINDIR)/gpuaggd|g' -e 's|/etc/gpuagg/|$(CONFDIR)/|g' \
	    systemd/gpuaggd.service > $(DESTDIR)$(SYSTEMDUNITDIR)/gpuaggd.service.tmp
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/gpuaggd.service.tmp
	mv $(DESTDIR)$(SYSTEMDUNITDIR)/gpuaggd.service.tmp $(DESTDIR)$(SYSTEMDUNITDIR)/gpuaggd.service
	install -m 0644 systemd/gpuagg.sysusers $(DESTDIR)$(SYSUSERSDIR)/gpuagg.conf

# Removes what install put.  The config goes only if it is still the
# shipped one (byte for byte); an edited one stays, as dpkg keeps a
# modified conffile.  The gpuagg user and /var/lib/gpuagg (the journal:
# points not yet in PostgreSQL) are not touched.
uninstall: uninstall-ceilometer
	rm -f $(DESTDIR)$(SBINDIR)/gpuaggd $(DESTDIR)$(BINDIR)/gpuaggctl $(DESTDIR)$(BINDIR)/gpuagg-load \
	      $(DESTDIR)$(MANDIR)/man8/gpuaggd.8 $(DESTDIR)$(MANDIR)/man1/gpuaggctl.1 $(DESTDIR)$(MANDIR)/man1/gpuagg-load.1 \
	      $(DESTDIR)$(SYSTEMDUNITDIR)/gpuaggd.service $(DESTDIR)$(SYSUSERSDIR)/gpuagg.conf \
	      $(DESTDIR)$(CONFDIR)/gpuaggd.yaml.dist $(DESTDIR)$(DATADIR)/grafana/gpuagg.json
	rmdir $(DESTDIR)$(DATADIR)/grafana $(DESTDIR)$(DATADIR) 2>/dev/null || true
	@conf=$(DESTDIR)$(CONFDIR)/gpuaggd.yaml; \
	if [ -e "$$conf" ] && ! cmp -s etc/gpuaggd.yaml "$$conf"; then \
	    echo "uninstall: $$conf differs from etc/gpuaggd.yaml and is kept"; \
	else echo "rm -f $$conf"; rm -f "$$conf"; rmdir "$(DESTDIR)$(CONFDIR)" 2>/dev/null || true; fi
uninstall-ceilometer:
	rm -rf $(DESTDIR)$(PYSITE)/gpuagg_ceilometer $(CEILO_DIST)

# A Debian binary package of the built binaries (tools/debian/build-deb.sh):
# staged by install with PREFIX=/usr under DEB_DIR/root, written to
# DEB_DIR/gpuagg_VERSION_ARCH.deb.
DEB_DIR ?= $(BUILD)/deb
deb: $(BINS)
	@[ -n "$(strip $(DEB_DIR))" ] || { echo "make deb: DEB_DIR is empty" >&2; exit 1; }
	rm -rf $(DEB_DIR)/root
	$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(DEB_DIR))/root
	sh tools/debian/build-deb.sh $(DEB_DIR)/root $(VERSION) $(DEB_DIR)

clean:
	rm -rf build build-asan build-tsan build-fuzz var

-include $(shell find $(BUILD)/obj -name '*.d' -type f 2>/dev/null)
