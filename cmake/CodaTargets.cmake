# Helpers that give every coda target the same flags. Includes are rooted at the repository top
# (#include "core/units.h"); each folder is one library, and target_link_libraries states which
# folders it may use (DESIGN.md's arrows).

set(CODA_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
                  -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual
                  -Wimplicit-fallthrough
                  -Wno-missing-field-initializers)  # designated initializers rely on defaults
if(CODA_WERROR)
  list(APPEND CODA_WARNINGS -Werror)
endif()

function(coda_set_flags target)
  target_compile_options(${target} PRIVATE ${CODA_WARNINGS})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

# coda_library(NAME SOURCES ... DEPENDS ...): one folder's library target, coda::NAME.
function(coda_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_library(coda_${name} STATIC ${ARG_SOURCES})
  add_library(coda::${name} ALIAS coda_${name})
  coda_set_flags(coda_${name})
  target_link_libraries(coda_${name} PUBLIC ${ARG_DEPENDS})
endfunction()

# coda_test(NAME SOURCES ... DEPENDS ...): a GoogleTest executable registered with CTest. Tests run
# from the repository top so they can read the bundled configs/ by relative path.
function(coda_test name)
  if(NOT CODA_BUILD_TESTS)
    return()
  endif()
  # PREFIX: put before every test name (validation's "validation." lets `ctest -R validation`
  # select them).
  cmake_parse_arguments(ARG "" "PREFIX" "SOURCES;DEPENDS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  coda_set_flags(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPENDS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} TEST_PREFIX "${ARG_PREFIX}"
                       PROPERTIES ENVIRONMENT "CODA_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()
