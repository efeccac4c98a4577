# hkgen: `make` builds ./build/hkgen; `make test` installs what is missing,
# builds, and runs CTest.
VERSION  := 0.1.0
CC       ?= cc
CFLAGS   ?= -O2 -g
WARN     := -std=c11 -Wall -Wextra -Werror -D_DEFAULT_SOURCE
# No path is compiled in: hkgen finds its templates and the emulator's
# headers relative to its own binary (gen/util.c fs_data_dir), so a build
# tree, an installed prefix and a copy of either all work.
DEFS     := -DHK_VERSION='"$(VERSION)"' -Iruntime/include -Icommon
LIBS     := -lyaml -ldl -lpthread -lm
B        := build
SRCS     := $(wildcard gen/*.c)
OBJS     := $(SRCS:gen/%.c=$(B)/obj/%.o)
ASAN_OBJS:= $(SRCS:gen/%.c=$(B)/asan/%.o)
# libhkrt: the runtime library (static for hkgen, shared for users and Python)
# common/: what gen/ and libhkrt share (the target table, the formula
# evaluator); built into libhkrt, which hkgen links.
CM_SRCS  := $(wildcard common/*.c)
RT_SRCS  := $(wildcard runtime/src/*.c)
RT_OBJS  := $(RT_SRCS:runtime/src/%.c=$(B)/rt/%.o) $(CM_SRCS:common/%.c=$(B)/rt/cm_%.o)
RT_FLAGS := -fPIC -fvisibility=hidden -Iruntime/include -Iruntime/src -Icommon
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# Debian packages hkgen needs to build, compile kernels and run its tests.
APT_PKGS := libyaml-dev m4 libamd-comgr-dev rocm-device-libs clang-22 lld-22 llvm-22 \
            libclang-rt-22-dev cmake python3 pkgconf python3-pip python3-setuptools python3-wheel
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test clean example install uninstall
all: $(B)/hkgen $(B)/libhkrt.a $(B)/libhkrt.so

$(B)/hkgen: $(OBJS) $(B)/libhkrt.a
	$(CC) $(CFLAGS) -o $@ $(OBJS) $(B)/libhkrt.a $(LIBS)

$(B)/libhkrt.a: $(RT_OBJS)
	rm -f $@ && ar rcs $@ $(RT_OBJS)

SONAME   := libhkrt.so.0
$(B)/libhkrt.so: $(RT_OBJS)
	$(CC) -shared -Wl,-soname,$(SONAME) -o $@ $(RT_OBJS) -ldl -lpthread

$(B)/rt/%.o: runtime/src/%.c $(wildcard runtime/src/*.h runtime/include/*.h common/*.h) | $(B)/rt
	$(CC) $(CFLAGS) $(WARN) $(RT_FLAGS) -c -o $@ $<

$(B)/rt/cm_%.o: common/%.c $(wildcard common/*.h) | $(B)/rt
	$(CC) $(CFLAGS) $(WARN) $(RT_FLAGS) -c -o $@ $<

$(B)/obj/%.o: gen/%.c $(wildcard gen/*.h common/*.h) | $(B)/obj
	$(CC) $(CFLAGS) $(WARN) $(DEFS) -c -o $@ $<

# The same program with AddressSanitizer and UBSan, used by the tests.
$(B)/hkgen-asan: $(ASAN_OBJS) $(B)/libhkrt.a
	$(CC) -g $(SAN) -o $@ $(ASAN_OBJS) $(B)/libhkrt.a $(LIBS)

$(B)/asan/%.o: gen/%.c $(wildcard gen/*.h common/*.h) | $(B)/asan
	$(CC) -O1 -g $(SAN) $(WARN) $(DEFS) -c -o $@ $<

$(B)/obj $(B)/asan $(B)/rt:
	mkdir -p $@

# Installs the missing packages only (apt-get update first, as on a fresh machine).
deps:
	@missing=""; for p in $(APT_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	fi

example: deps all
	./$(B)/hkgen build specs/llama3-8b-tp1.yaml -o $(B)/example
	./$(B)/hkgen inspect $(B)/example

test: deps
	$(MAKE) all $(B)/hkgen-asan
	$(MAKE) -C tests
	cd tests && ctest --output-on-failure -j2

clean:
	rm -rf $(B)

# make install [PREFIX=/usr/local] [DESTDIR=...]: a relocatable tree (the
# binary finds share/hkgen beside it; hkrt.pc and hkgenConfig.cmake find the
# prefix from their own place), so the folder may be moved or copied.
# make uninstall with the same PREFIX and DESTDIR removes exactly these.
PREFIX   ?= /usr/local
DEST     := $(DESTDIR)$(PREFIX)
INST_FILES := bin/hkgen lib/libhkrt.a lib/libhkrt.so.$(VERSION) lib/$(SONAME) lib/libhkrt.so \
            include/hkrt.h lib/pkgconfig/hkrt.pc lib/cmake/hkgen/hkgenConfig.cmake \
            lib/cmake/hkgen/hkgenConfigVersion.cmake lib/hkgen/python/hkrt.py \
            lib/hkgen/python/pyproject.toml share/man/man1/hkgen.1

install: all
	install -d $(DEST)/bin $(DEST)/lib/pkgconfig $(DEST)/lib/cmake/hkgen $(DEST)/include \
	  $(DEST)/share/hkgen/templates/include $(DEST)/share/hkgen/include $(DEST)/lib/hkgen/python
	install -m 755 $(B)/hkgen $(DEST)/bin/hkgen
	install -m 644 $(B)/libhkrt.a $(DEST)/lib/libhkrt.a
	install -m 755 $(B)/libhkrt.so $(DEST)/lib/libhkrt.so.$(VERSION)
	ln -sf libhkrt.so.$(VERSION) $(DEST)/lib/$(SONAME)
	ln -sf $(SONAME) $(DEST)/lib/libhkrt.so
	install -m 644 runtime/include/hkrt.h $(DEST)/include/hkrt.h
	install -m 644 templates/*.m4 templates/README.md $(DEST)/share/hkgen/templates/
	install -m 644 templates/include/*.h $(DEST)/share/hkgen/templates/include/
	install -m 644 runtime/include/hk_emu.h runtime/include/hk_emu_abi.h runtime/include/hk_emu_fp8.h $(DEST)/share/hkgen/include/
	sed 's/@VERSION@/$(VERSION)/' cmake/hkrt.pc.in > $(DEST)/lib/pkgconfig/hkrt.pc
	install -m 644 cmake/hkgenConfig.cmake $(DEST)/lib/cmake/hkgen/hkgenConfig.cmake
	sed 's/@VERSION@/$(VERSION)/' cmake/hkgenConfigVersion.cmake.in > $(DEST)/lib/cmake/hkgen/hkgenConfigVersion.cmake
	install -m 644 runtime/python/hkrt.py runtime/python/pyproject.toml $(DEST)/lib/hkgen/python/
	install -d $(DEST)/share/man/man1
	install -m 644 docs/hkgen.1 $(DEST)/share/man/man1/hkgen.1

uninstall:
	rm -f $(addprefix $(DEST)/,$(INST_FILES))
	rm -rf $(DEST)/share/hkgen
	-rmdir $(DEST)/lib/cmake/hkgen $(DEST)/lib/hkgen/python $(DEST)/lib/hkgen 2>/dev/null
