# Finds OpenBLAS (Debian: libopenblas-dev) and defines the INTERFACE target
# wm_openblas (library and cblas.h); sets WMAP_HAVE_OPENBLAS.
set(WMAP_HAVE_OPENBLAS OFF)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(WMAP_OPENBLAS QUIET IMPORTED_TARGET openblas)
endif()
add_library(wm_openblas INTERFACE)
if(WMAP_OPENBLAS_FOUND)
  target_link_libraries(wm_openblas INTERFACE PkgConfig::WMAP_OPENBLAS)
  set(WMAP_HAVE_OPENBLAS ON)
else()
  find_library(WMAP_OPENBLAS_LIB openblas
               PATH_SUFFIXES openblas-pthread openblas-openmp openblas)
  find_path(WMAP_CBLAS_INCLUDE cblas.h
            PATH_SUFFIXES openblas-pthread openblas
                          x86_64-linux-gnu/openblas-pthread)
  if(WMAP_OPENBLAS_LIB AND WMAP_CBLAS_INCLUDE)
    target_link_libraries(wm_openblas INTERFACE ${WMAP_OPENBLAS_LIB})
    target_include_directories(wm_openblas INTERFACE ${WMAP_CBLAS_INCLUDE})
    set(WMAP_HAVE_OPENBLAS ON)
  else()
    message(STATUS "OpenBLAS not found: no cpu backend, no operator bench")
  endif()
endif()
