# wm_module(NAME [DEPS ...] [TEST_DEPS ...]): a static library wm_NAME from
# every .c in the current folder except *_test.c, plus one unit test per
# *_test.c named NAME.FILE, labelled unit and also linking TEST_DEPS.
function(wm_module name)
  cmake_parse_arguments(ARG "" "" "DEPS;TEST_DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.c)
  if(tests)
    list(REMOVE_ITEM srcs ${tests})
  endif()
  add_library(wm_${name} STATIC ${srcs})
  target_include_directories(wm_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                                ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(wm_${name} PUBLIC ${ARG_DEPS})
  set_target_properties(wm_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  foreach(t ${tests})
    get_filename_component(base ${t} NAME_WE)
    string(REGEX REPLACE "_test$" "" stem ${base})
    add_executable(test_${name}_${stem} ${t})
    target_link_libraries(test_${name}_${stem} PRIVATE wm_${name} wm_testing
                          ${ARG_TEST_DEPS})
    add_test(NAME ${name}.${stem} COMMAND test_${name}_${stem})
    set_tests_properties(${name}.${stem} PROPERTIES LABELS unit
      SKIP_RETURN_CODE 77
      ENVIRONMENT "WMAP_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  endforeach()
endfunction()
