# install.sh (CTest install_consumer): `make install` into a staging folder
# (DESTDIR + PREFIX), the tree then moved elsewhere (it must be relocatable),
# and a consumer project outside hkgen (tests/consumer) built from it twice:
# with CMake (find_package(hkgen), hkgen_add_catalog: a catalogue generated
# at build time, rebuilt when its spec changes and only then) and with a
# plain Makefile through pkg-config. Each runs RMSNorm from its catalogue on
# the emulator against an fp64 reference. Then the Python module from the
# prefix, the versions, and `make uninstall` leaving nothing behind.
. "$(dirname "$0")/../lib/lib.sh"

make -s -C "$TOP" install DESTDIR="$T/stage" PREFIX=/opt/hkgen >"$T/install.txt" 2>&1 ||
  { cat "$T/install.txt" >&2; fail "make install"; }
for f in bin/hkgen lib/libhkrt.a lib/libhkrt.so lib/libhkrt.so.0 include/hkrt.h lib/pkgconfig/hkrt.pc \
  lib/cmake/hkgen/hkgenConfig.cmake lib/cmake/hkgen/hkgenConfigVersion.cmake \
  share/hkgen/templates/hk.m4 share/hkgen/templates/include/hk_cdna.h share/hkgen/include/hk_emu.h \
  lib/hkgen/python/hkrt.py; do
  [ -e "$T/stage/opt/hkgen/$f" ] || fail "make install did not install $f"
done
readelf -d "$T/stage/opt/hkgen/lib/libhkrt.so.0" | grep -q 'SONAME.*libhkrt.so.0' || fail "libhkrt has no soname libhkrt.so.0"
# nothing of the source tree is compiled in
for p in "$TOP/templates" "$TOP/runtime/include"; do
  if grep -aq "$p" "$T/stage/opt/hkgen/bin/hkgen"; then fail "bin/hkgen holds the build-time path $p"; fi
done

P=$T/moved/prefix # relocated: neither the staging folder nor /opt/hkgen
mkdir -p "$T/moved"
cp -a "$T/stage/opt/hkgen" "$P"
ver=$("$P/bin/hkgen" --version | awk '{print $2}')
[ -n "$ver" ] || fail "the installed hkgen does not say its version"
"$P/bin/hkgen" check "$TESTS_DIR/consumer/consumer.yaml" >/dev/null || fail "installed hkgen check"

# CMake: configure, build (the catalogue is made at build time), run
cmake -S "$TESTS_DIR/consumer" -B "$T/cm" -DCMAKE_PREFIX_PATH="$P" >"$T/cmake.txt" 2>&1 ||
  { cat "$T/cmake.txt" >&2; fail "cmake configure of the consumer"; }
cmake --build "$T/cm" >"$T/cm1.txt" 2>&1 || { cat "$T/cm1.txt" >&2; fail "cmake build of the consumer"; }
grep -q "building catalogue consumer_catalog" "$T/cm1.txt" || fail "the first build did not make the catalogue"
"$T/cm/consumer" "$T/cm/consumer_catalog" || fail "the CMake consumer's run"
# an unchanged build does nothing; editing the spec rebuilds the catalogue
cmake --build "$T/cm" >"$T/cm2.txt" 2>&1 || fail "second cmake build"
if grep -q "building catalogue" "$T/cm2.txt"; then fail "an unchanged consumer rebuilt its catalogue"; fi
cp -r "$TESTS_DIR/consumer" "$T/src"
cmake -S "$T/src" -B "$T/cm3" -DCMAKE_PREFIX_PATH="$P" >/dev/null 2>&1 || fail "cmake configure (copy)"
cmake --build "$T/cm3" >/dev/null 2>&1 || fail "cmake build (copy)"
sleep 1
printf '# edited\n' >>"$T/src/consumer.yaml"
cmake --build "$T/cm3" >"$T/cm4.txt" 2>&1 || fail "cmake build after the spec edit"
grep -q "building catalogue consumer_catalog" "$T/cm4.txt" || fail "editing the spec did not rebuild the catalogue"
"$T/cm3/consumer" "$T/cm3/consumer_catalog" || fail "the rebuilt consumer's run"

# a plain Makefile with pkg-config
[ "$(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --modversion hkrt)" = "$ver" ] ||
  fail "hkrt.pc's version is not hkgen's ($ver)"
mkdir -p "$T/mk"
PKG_CONFIG_PATH="$P/lib/pkgconfig" make -s -f "$TESTS_DIR/consumer/Makefile" O="$T/mk" >"$T/mk.txt" 2>&1 ||
  { cat "$T/mk.txt" >&2; fail "the pkg-config consumer's build"; }
LD_LIBRARY_PATH="$P/lib" "$T/mk/consumer" "$T/mk/catalog" || fail "the pkg-config consumer's run"

# Python from the prefix: the module finds the prefix's libhkrt and opens the catalogue
PYTHONPATH="$P/lib/hkgen/python" python3 - "$P" "$ver" "$T/mk/catalog" <<'PY' || fail "hkrt.py from the prefix"
import os, sys
import hkrt
prefix, ver, cat = sys.argv[1:]
assert hkrt.__file__.startswith(prefix), hkrt.__file__
lib = os.path.realpath(hkrt._find_lib())
assert lib.startswith(os.path.realpath(prefix)), lib
assert hkrt.__version__ == ver, (hkrt.__version__, ver)
c = hkrt.Catalog(cat, backend="emu", target="gfx942")
assert [k.name for k in c.kernels()] == ["consumer_rms"], [k.name for k in c.kernels()]
PY

# the Python package installs offline with Debian's pip (from a copy: pip
# writes build folders beside pyproject.toml)
cp -r "$TOP/runtime/python" "$T/pysrc"
/usr/bin/python3 -m pip install -q --no-build-isolation --no-index --target "$T/pip" "$T/pysrc" \
  >"$T/pip.txt" 2>&1 || { cat "$T/pip.txt" >&2; fail "pip install of runtime/python"; }
PYTHONPATH="$T/pip" HKRT_LIB="$P/lib/libhkrt.so.0" python3 -c "import hkrt; assert hkrt.__version__ == '$ver'" ||
  fail "hkrt from pip"

make -s -C "$TOP" uninstall DESTDIR="$T/stage" PREFIX=/opt/hkgen >/dev/null 2>&1 || fail "make uninstall"
left=$(find "$T/stage/opt/hkgen" -type f -o -type l | head -5)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install_consumer: ok (hkgen $ver)"
