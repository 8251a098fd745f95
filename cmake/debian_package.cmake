# CPack: `cpack -G DEB` (in the build directory) packs what `cmake --install` installs, under
# /usr, into cua-s1-server_<version>_<arch>.deb. Its run-time dependencies come from
# dpkg-shlibdeps (dpkg-dev) on the installed programs; the -dev packages an embedding host
# builds against are suggested.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cua-s1-server)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "cua-s1")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Native inference server for closed-choice UI decisions from a screenshot")
set(CPACK_PACKAGE_DESCRIPTION
  "cua-s1-server answers POST /v1/systemone: one PNG/JPEG screenshot and up to 8 choice questions, scored by Qwen3.5-4B with the cua-s1-4b-0.2 LoRA (CPU reference backend, CUDA backend when built with it). The package holds the server, cua-s1-prepare, the decision engine's static libraries, headers and CMake package (find_package(cua_s1)) for Asio hosts that embed it, and a bundled tiny model with random weights for trying the API.")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER
  "Seed 9f155bb8 maintainers <maintainers@users.noreply.a-seed-9f155bb8.example>")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
  "libboost1.81-dev, libboost-json1.81-dev, libssl-dev, libspng-dev, libturbojpeg0-dev, libdeflate-dev, zlib1g-dev, libzstd-dev, libopenblas-dev, pkg-config")
set(CPACK_STRIP_FILES ON)  # the programs without their debug information
include(CPack)
