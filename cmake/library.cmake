# libwmap: the one public library (libwmap.so with a versioned SONAME, and
# libwmap.a), made of the internal modules; only the functions declared in
# include/wmap between WM_API_BEGIN and WM_API_END are exported. Also the
# install: library, headers, wmap.pc, the CMake package (wmap::wmap), the
# backend plugins under <libdir>/wmap/backends, the CLI, docs, man pages.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The modules libwmap is made of, in link order.
set(WMAP_LIB_MODULES wm_bench wm_map wm_report wm_runtime wm_backend_ref
    wm_host_tier wm_plugin_error wm_plugin wm_zoo wm_onnx wm_ops wm_gen
    wm_comm wm_ir wm_base)

# pkg-config modules libwmap needs (Requires.private), as found here.
set(WMAP_PC_REQUIRES libprotobuf-c libcjson)
foreach(codec JPEG=libjpeg PNG=libpng TIFF=libtiff-4 WEBP=libwebp
        OPENJP2=libopenjp2)
  string(REPLACE "=" ";" pair ${codec})
  list(GET pair 0 name)
  list(GET pair 1 module)
  if(WM_${name}_FOUND)
    list(APPEND WMAP_PC_REQUIRES ${module})
  endif()
endforeach()
if(MPI_C_FOUND)
  list(APPEND WMAP_PC_REQUIRES ompi-c)
endif()
list(JOIN WMAP_PC_REQUIRES " " WMAP_PC_REQUIRES)

# The shared library: every module's objects (whole archives), the system
# libraries they need linked privately.
add_library(libwmap SHARED ${PROJECT_SOURCE_DIR}/src/lib/version.c)
target_compile_definitions(libwmap PRIVATE WMAP_VERSION="${PROJECT_VERSION}")
set(whole "")
foreach(m ${WMAP_LIB_MODULES})
  add_dependencies(libwmap ${m})
  list(APPEND whole $<TARGET_FILE:${m}>)
endforeach()
target_link_libraries(libwmap PRIVATE
  -Wl,--whole-archive ${whole} -Wl,--no-whole-archive ${WMAP_LIB_MODULES})
target_link_options(libwmap PRIVATE -Wl,--no-undefined -Wl,-Bsymbolic-functions)
target_include_directories(libwmap PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(libwmap PROPERTIES
  OUTPUT_NAME wmap
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# The static library: the modules' archives merged into one.
set(WMAP_STATIC ${CMAKE_BINARY_DIR}/libwmap.a)
set(mri "create ${WMAP_STATIC}\n")
foreach(m ${WMAP_LIB_MODULES})
  string(APPEND mri "addlib $<TARGET_FILE:${m}>\n")
endforeach()
string(APPEND mri "addmod $<JOIN:$<TARGET_OBJECTS:libwmap>, >\nsave\nend\n")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/libwmap.mri CONTENT "${mri}")
set(deps "")
foreach(m ${WMAP_LIB_MODULES})
  list(APPEND deps $<TARGET_FILE:${m}>)
endforeach()
add_custom_command(OUTPUT ${WMAP_STATIC}
  COMMAND ${CMAKE_COMMAND} -E rm -f ${WMAP_STATIC}
  COMMAND ${CMAKE_AR} -M < ${CMAKE_BINARY_DIR}/libwmap.mri
  DEPENDS ${deps} libwmap ${CMAKE_BINARY_DIR}/libwmap.mri
  COMMENT "Merging the modules into libwmap.a")
add_custom_target(libwmap_static ALL DEPENDS ${WMAP_STATIC})

# Install.
install(TARGETS libwmap LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${WMAP_STATIC} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/wmap
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(plugin wmap_backend_cpu wmap_backend_opencl wmap_backend_cuda)
  if(TARGET ${plugin})
    install(TARGETS ${plugin}
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/wmap/backends)
  endif()
endforeach()
install(TARGETS wmap RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

configure_file(${PROJECT_SOURCE_DIR}/cmake/wmap.pc.in
               ${CMAKE_BINARY_DIR}/wmap.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/wmap.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
configure_file(${PROJECT_SOURCE_DIR}/cmake/wmapConfig.cmake.in
               ${CMAKE_BINARY_DIR}/wmapConfig.cmake @ONLY)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/wmapConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/wmapConfig.cmake
              ${CMAKE_BINARY_DIR}/wmapConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/wmap)

# Man pages, made from the CLI's own --help text.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/wmap.1
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/help2man.py
            $<TARGET_FILE:wmap> ${CMAKE_BINARY_DIR}/man
    DEPENDS wmap ${PROJECT_SOURCE_DIR}/scripts/help2man.py
    COMMENT "Making the man pages from wmap --help")
  add_custom_target(wmap_man ALL DEPENDS ${CMAKE_BINARY_DIR}/man/wmap.1)
  install(DIRECTORY ${CMAKE_BINARY_DIR}/man/
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1")
endif()
