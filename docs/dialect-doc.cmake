# cmake -DMODE=update|check -DGENERATED=<mlir-tblgen output> -DCOMMITTED=<docs file> -P dialect-doc.cmake
#
# The committed reference is a short header followed by mlir-tblgen's
# -gen-dialect-doc output, unchanged. MODE=update writes it; MODE=check fails
# if the committed file differs.

foreach(var MODE GENERATED COMMITTED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "dialect-doc.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${GENERATED}")
  message(FATAL_ERROR "${GENERATED} does not exist: build the project first "
                      "(ninja -C build)")
endif()

file(READ "${GENERATED}" generated)
set(header "<!-- Generated from include/fdc/Dialect/Decode/IR/*.td by mlir-tblgen -gen-dialect-doc. Do not edit: run `ninja -C build fdc-doc`. -->\n\n")
set(expected "${header}${generated}")

if(MODE STREQUAL "update")
  set(current "")
  if(EXISTS "${COMMITTED}")
    file(READ "${COMMITTED}" current)
  endif()
  if(NOT current STREQUAL expected)
    file(WRITE "${COMMITTED}" "${expected}")
    message(STATUS "Updated ${COMMITTED}")
  else()
    message(STATUS "${COMMITTED} is up to date")
  endif()
elseif(MODE STREQUAL "check")
  if(NOT EXISTS "${COMMITTED}")
    message(FATAL_ERROR "${COMMITTED} is missing: run `ninja -C build fdc-doc` "
                        "and commit docs/dialect/Decode.md")
  endif()
  file(READ "${COMMITTED}" current)
  if(NOT current STREQUAL expected)
    message(FATAL_ERROR "docs/dialect/Decode.md is out of date with the decode "
                        "dialect's ODS: run `ninja -C build fdc-doc` and commit "
                        "docs/dialect/Decode.md")
  endif()
  message(STATUS "docs/dialect/Decode.md is up to date")
else()
  message(FATAL_ERROR "dialect-doc.cmake: MODE must be update or check, got '${MODE}'")
endif()
