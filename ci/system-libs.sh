# shellcheck shell=bash
# system_lib <soname>: whether a library is the machine's own, never carried
# in the bundle (ci/bundle.sh) and allowed outside it (tests/check-bundle.sh):
# the C library's and the C++ runtime's, since a second glibc cannot be
# loaded beside the first.
system_lib() {
  case $1 in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | libdl.so.* | \
      libpthread.so.* | librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | \
      libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}
