#!/usr/bin/env bash
# Installs a build tree, moves the installed tree to another prefix, and
# checks that it works from there: RUNPATHs ($ORIGIN-relative, no build-tree
# path), the libraries each binary loads (its own tree's), the tools run, and
# a C/C++ project builds against it with find_package(fdc_runtime).
#
#   check-install.sh BUILD_DIR WORK_DIR [REPO_ROOT PYTHON]
#
# With REPO_ROOT and PYTHON (the top-level build), the installed fdc also
# compiles a tiny model that the installed fdc-run, `fdc run` and the
# consumer then run. Environment (set by ctest): CMAKE (cmake), CC, CXX
# (compilers for the consumer), CXXFLAGS/CFLAGS, FDC_BINDIR / FDC_LIBDIR
# (install dirs, default bin / lib), FDC_RPATH (the expected RUNPATH of an
# installed executable, default $ORIGIN/../lib).
set -euo pipefail

build=$(cd "$1" && pwd -P)
work=$2
repo=${3:-}
python=${4:-}
here=$(cd "$(dirname "$0")" && pwd -P)
cmake=${CMAKE:-cmake}
bindir=${FDC_BINDIR:-bin}
libdir=${FDC_LIBDIR:-lib}
rpath=${FDC_RPATH:-'$ORIGIN/../lib'}
full=0
[[ -n $repo && -n $python ]] && full=1

fail() { echo "check-install: FAIL: $*" >&2; exit 1; }
step() { echo "check-install: $*"; }
readelf=$(command -v llvm-readelf-22 || command -v llvm-readelf ||
  command -v readelf) || fail "no readelf"
# Only RUNPATHs may lead the loader to our libraries.
unset LD_LIBRARY_PATH LD_PRELOAD

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd -P)
step "cmake --install $build --prefix $work/a"
"$cmake" --install "$build" --prefix "$work/a" > "$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install failed"; }
# A different prefix: nothing may still point at a/ (or the build tree).
mv "$work/a" "$work/b"
b=$work/b

step "layout"
expect=(
  "$bindir/fdc-run"
  "$libdir/libfdc_runtime.so"
  include/fdc_runtime.h
  include/fdc_model_abi.h
  include/fdc/runtime/Model.h
  include/fdc/runtime/Json.h
  include/fdc/runtime/DeviceBackend.h
  include/fdc/runtime/cuda/CudaBackend.h
  include/fdc/runtime/hip/HipBackend.h
  "$libdir/cmake/fdc_runtime/fdc_runtimeConfig.cmake"
  "$libdir/cmake/fdc_runtime/fdc_runtimeConfigVersion.cmake"
  "$libdir/cmake/fdc_runtime/fdc_runtimeTargets.cmake"
)
tools=(fdc-inspect fdc-pack fdc-run fdc-tune)
if ((full)); then
  expect+=("$bindir/fdc" "$bindir/fdc-opt")
  tools=(fdc fdc-inspect fdc-opt fdc-pack fdc-run fdc-tune)
fi
for f in "${expect[@]}"; do
  [[ -f $b/$f ]] || fail "$f is not installed"
done
# bin/ holds the tools and nothing else (no tests, no fuzzers).
got=$(cd "$b/$bindir" && ls | sort | tr '\n' ' ')
want=$(printf '%s\n' "${tools[@]}" | sort | tr '\n' ' ')
[[ $got == "$want" ]] || fail "$bindir/ holds '$got', expected '$want'"
stray=$(cd "$b" && find . \( -iname '*test*' -o -iname '*fuzz*' -o -name '*.a' \
  -o -name RunCommand.h -o -name ToolCommands.h \) -print)
[[ -z $stray ]] || fail "installed but should not be: $stray"

step "RUNPATHs"
for f in "$b/$bindir"/* "$b/$libdir"/*.so; do
  dyn=$("$readelf" -d "$f")
  if grep -F -e "$build" -e "$work/a" ${repo:+-e "$repo"} <<<"$dyn"; then
    fail "$f has a build-tree path in its dynamic section"
  fi
  if grep -q '(RPATH)' <<<"$dyn"; then
    fail "$f has a DT_RPATH (expected DT_RUNPATH)"
  fi
done
runpath() {
  "$readelf" -d "$1" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p'
}
for t in fdc-run fdc-inspect fdc-tune fdc-pack; do
  got=$(runpath "$b/$bindir/$t")
  [[ $got == "$rpath" ]] || fail "$t RUNPATH is '$got', expected '$rpath'"
done
if ((full)); then
  for t in fdc fdc-opt; do
    got=$(runpath "$b/$bindir/$t")
    [[ $got == "$rpath":* ]] ||
      fail "$t RUNPATH is '$got', expected '$rpath:<LLVM lib dir>'"
  done
fi
got=$(runpath "$b/$libdir/libfdc_runtime.so")
[[ -z $got ]] || fail "libfdc_runtime.so has a RUNPATH: '$got'"

# The libfdc_runtime.so that ldd says BINARY loads is the installed one.
loads_ours() {
  local deps got
  deps=$(ldd "$1")
  ! grep 'not found' <<<"$deps" || fail "$1: a library is not found"
  got=$(awk '$1 == "libfdc_runtime.so" { print $3 }' <<<"$deps")
  [[ -n $got && $(realpath "$got") == "$b/$libdir/libfdc_runtime.so" ]] ||
    fail "$1 does not load $b/$libdir/libfdc_runtime.so:"$'\n'"$deps"
}

step "ldd"
for t in "${tools[@]}"; do
  [[ $t == fdc-opt ]] && continue # does not use the runtime
  loads_ours "$b/$bindir/$t"
done
if ((full)); then
  ! ldd "$b/$bindir/fdc-opt" | grep 'not found' || fail "fdc-opt: not found"
fi

step "tools run"
"$b/$bindir/fdc-run" --help > "$work/fdc-run-help.txt" || fail "fdc-run --help"
if ((full)); then
  "$b/$bindir/fdc" --help > "$work/fdc-help.txt" || fail "fdc --help"
  "$b/$bindir/fdc-opt" --version > "$work/fdc-opt-version.txt" ||
    fail "fdc-opt --version"
fi

step "consumer project: find_package(fdc_runtime) in $b"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
"$cmake" "${generator[@]}" -S "$here/consumer" -B "$work/consumer" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$b" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  ${CC:+-DCMAKE_C_COMPILER="$CC"} ${CXX:+-DCMAKE_CXX_COMPILER="$CXX"} \
  > "$work/consumer-configure.log" 2>&1 ||
  { cat "$work/consumer-configure.log"; fail "consumer: configure failed"; }
grep -q "fdc_runtime_DIR: $b/$libdir/cmake/fdc_runtime\$" \
  "$work/consumer-configure.log" ||
  { cat "$work/consumer-configure.log"; fail "consumer: found another fdc_runtime"; }
"$cmake" --build "$work/consumer" > "$work/consumer-build.log" 2>&1 ||
  { cat "$work/consumer-build.log"; fail "consumer: build failed"; }
for c in consumer consumer-c; do
  loads_ours "$work/consumer/$c"
  "$work/consumer/$c" || fail "$c failed"
done

if ((full)); then
  step "compile and run a tiny model with the installed tools"
  export PYTHONPATH=$repo/python
  "$python" -m fdc.testing.tiny_checkpoint "$work/ckpt" --variant mha > /dev/null
  "$python" -m fdc.frontend "$work/ckpt" -o "$work/tiny.mlir"
  "$b/$bindir/fdc" compile "$work/tiny.mlir" -o "$work/tiny.so" ||
    fail "fdc compile"
  args=(--weights "$work/ckpt" --prompt-ids 3,1,4,1,5 --max-new-tokens 8)
  "$b/$bindir/fdc-run" "$work/tiny.so" "${args[@]}" > "$work/fdc-run.txt" ||
    fail "fdc-run"
  "$b/$bindir/fdc" run "$work/tiny.so" "${args[@]}" > "$work/fdc-run2.txt" ||
    fail "fdc run"
  "$work/consumer/consumer" "$work/tiny.so" "$work/ckpt" 3 1 4 1 5 \
    > "$work/consumer.txt" || fail "consumer with a model"
  ids=$(grep '^ids: ' "$work/fdc-run.txt") || fail "fdc-run printed no ids"
  [[ $(grep '^ids: ' "$work/fdc-run2.txt") == "$ids" ]] ||
    fail "fdc run and fdc-run disagree"
  [[ $(grep '^ids: ' "$work/consumer.txt") == "$ids" ]] ||
    fail "the consumer and fdc-run disagree"
  echo "$ids"
fi
step "ok"
