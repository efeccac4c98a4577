# hkgenConfig.cmake: find_package(hkgen) for an installed hkgen (make install).
#
# Provides
#   hkgen::hkrt          the runtime, shared (include/hkrt.h)
#   hkgen::hkrt_static   the runtime, static (links dl and pthread)
#   hkgen::hkgen         the generator, an imported executable
#   HKGEN_EXECUTABLE     its path
#   hkgen_add_catalog(NAME SPEC <spec>... [TARGETS <target>...] [OUTPUT_DIR <dir>]
#                     [EMULATE] [OPTIONS <hkgen build option>...])
#     a target NAME that runs `hkgen build` at build time into OUTPUT_DIR
#     (default: ${CMAKE_CURRENT_BINARY_DIR}/NAME), again only when a spec,
#     hkgen or its templates change. EMULATE builds host objects for libhkrt's
#     CPU emulator instead of GPU code objects. Sets NAME_CATALOG_DIR in the
#     caller's scope and the target property HKGEN_CATALOG_DIR; a consumer
#     target orders itself after the catalogue with add_dependencies().
#
# The prefix is found from this file's place (lib/cmake/hkgen), so an
# installed tree may be moved.
cmake_minimum_required(VERSION 3.16)
get_filename_component(_hkgen_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

set(HKGEN_EXECUTABLE "${_hkgen_prefix}/bin/hkgen")
set(HKGEN_TEMPLATE_DIR "${_hkgen_prefix}/share/hkgen/templates")
foreach(_hkgen_f "${HKGEN_EXECUTABLE}" "${_hkgen_prefix}/lib/libhkrt.so.0" "${_hkgen_prefix}/include/hkrt.h")
  if(NOT EXISTS "${_hkgen_f}")
    set(hkgen_FOUND FALSE)
    set(hkgen_NOT_FOUND_MESSAGE "hkgen install at ${_hkgen_prefix} lacks ${_hkgen_f}")
    return()
  endif()
endforeach()

if(NOT TARGET hkgen::hkrt)
  add_library(hkgen::hkrt SHARED IMPORTED)
  set_target_properties(hkgen::hkrt PROPERTIES
    IMPORTED_LOCATION "${_hkgen_prefix}/lib/libhkrt.so.0"
    IMPORTED_SONAME "libhkrt.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_hkgen_prefix}/include")
  add_library(hkgen::hkrt_static STATIC IMPORTED)
  set_target_properties(hkgen::hkrt_static PROPERTIES
    IMPORTED_LOCATION "${_hkgen_prefix}/lib/libhkrt.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_hkgen_prefix}/include"
    INTERFACE_LINK_LIBRARIES "dl;pthread")
  add_executable(hkgen::hkgen IMPORTED)
  set_target_properties(hkgen::hkgen PROPERTIES IMPORTED_LOCATION "${HKGEN_EXECUTABLE}")
endif()

function(hkgen_add_catalog name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "EMULATE" "OUTPUT_DIR" "SPEC;TARGETS;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "hkgen_add_catalog(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SPEC)
    message(FATAL_ERROR "hkgen_add_catalog(${name}): SPEC <spec>... is required")
  endif()
  if(NOT arg_OUTPUT_DIR)
    set(arg_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  endif()
  get_filename_component(out "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(specs)
  foreach(s IN LISTS arg_SPEC)
    get_filename_component(abs "${s}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND specs "${abs}")
  endforeach()
  set(cmd "${HKGEN_EXECUTABLE}" build ${specs} -o "${out}" -q)
  if(arg_TARGETS)
    string(REPLACE ";" "," targets "${arg_TARGETS}")
    list(APPEND cmd --target "${targets}")
  endif()
  if(arg_EMULATE)
    list(APPEND cmd --emulate)
  endif()
  list(APPEND cmd ${arg_OPTIONS})
  # the templates are inputs too: a new hkgen install rebuilds the catalogue
  file(GLOB_RECURSE tpl CONFIGURE_DEPENDS "${HKGEN_TEMPLATE_DIR}/*")
  add_custom_command(OUTPUT "${out}/manifest.json"
    COMMAND ${cmd}
    DEPENDS ${specs} "${HKGEN_EXECUTABLE}" ${tpl}
    COMMENT "hkgen: building catalogue ${name}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${out}/manifest.json")
  set_target_properties(${name} PROPERTIES HKGEN_CATALOG_DIR "${out}")
  set(${name}_CATALOG_DIR "${out}" PARENT_SCOPE)
endfunction()
