# The engine's link dependencies, one list read both by this build (CMakeLists.txt) and by the
# installed package config (cua_s1-config.cmake), so that find_package(cua_s1) finds what the
# build linked. A new dependency is one line here, e.g. `cua_s1_pkg_config_dependency(ZSTD
# libzstd)` for the target PkgConfig::ZSTD, besides its target_link_libraries in src/.
# The includer defines cua_s1_package_dependency(<find_package arguments>) and
# cua_s1_pkg_config_dependency(<PREFIX> <pkg-config module>), which makes PkgConfig::<PREFIX>.
cua_s1_package_dependency(Boost 1.81 COMPONENTS json)
cua_s1_package_dependency(OpenSSL COMPONENTS Crypto SSL)  # digests; TLS (--tls-cert)
cua_s1_package_dependency(Threads)
cua_s1_package_dependency(ZLIB)  # PNG text and ICC chunks, inflated as Pillow's zlib does
cua_s1_pkg_config_dependency(SPNG spng)
cua_s1_pkg_config_dependency(TURBOJPEG libturbojpeg)
cua_s1_pkg_config_dependency(DEFLATE libdeflate)  # one-call inflate of a PNG's image data
cua_s1_pkg_config_dependency(OPENBLAS openblas)   # the CPU backend's GEMMs
# zstd request bodies (Content-Encoding: zstd): the reference implementation, streamed with its
# window capped and its output bounded
cua_s1_pkg_config_dependency(ZSTD libzstd)
if(CUA_S1_WITH_CUDA)
  cua_s1_package_dependency(CUDAToolkit)  # CUDA::cudart_static, CUDA::cublasLt
endif()
