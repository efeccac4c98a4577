# hkgen: `make` builds ./build/hkgen; `make test` installs what is missing,
# builds, and runs CTest.
VERSION  := 0.1.0
CC       ?= cc
CFLAGS   ?= -O2 -g
WARN     := -std=c11 -Wall -Wextra -Werror -D_DEFAULT_SOURCE
DEFS     := -DHK_VERSION='"$(VERSION)"' -DHK_TEMPLATE_DIR='"$(CURDIR)/templates"' \
            -DHK_RUNTIME_INCLUDE='"$(CURDIR)/runtime/include"' -Iruntime/include -Icommon
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
            libclang-rt-22-dev cmake python3
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test clean example
all: $(B)/hkgen $(B)/libhkrt.a $(B)/libhkrt.so

$(B)/hkgen: $(OBJS) $(B)/libhkrt.a
	$(CC) $(CFLAGS) -o $@ $(OBJS) $(B)/libhkrt.a $(LIBS)

$(B)/libhkrt.a: $(RT_OBJS)
	rm -f $@ && ar rcs $@ $(RT_OBJS)

$(B)/libhkrt.so: $(RT_OBJS)
	$(CC) -shared -o $@ $(RT_OBJS) -ldl -lpthread

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
