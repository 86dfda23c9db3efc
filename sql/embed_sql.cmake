# phasekey_embed_sql(<target> NAMESPACE <c++ namespace> VARIABLE <name>
#                    FILES <file>...)
#
# Compiles SQL files into <target>: generates a C++ source that defines
#   extern const phasekey::SqlFile <namespace>::<name>[];
#   extern const std::size_t <namespace>::<name>_count;
# with each file's base name and verbatim text. The catalog (engine/src/sql)
# parses migrations ("NNNN_name.sql") and named queries ("-- name: Foo").
# A change to any file re-runs the generator.
set(PHASEKEY_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed_sql_generate.cmake")

function(phasekey_embed_sql target)
  cmake_parse_arguments(ARG "" "NAMESPACE;VARIABLE" "FILES" ${ARGN})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${ARG_VARIABLE}_embedded.cc")
  set(list_file "${CMAKE_CURRENT_BINARY_DIR}/${ARG_VARIABLE}_files.txt")
  string(REPLACE ";" "\n" file_lines "${ARG_FILES}")
  file(WRITE "${list_file}.in" "${file_lines}\n")
  configure_file("${list_file}.in" "${list_file}" COPYONLY)
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DLIST_FILE=${list_file} -DOUT=${out}
            -DNAMESPACE=${ARG_NAMESPACE} -DVARIABLE=${ARG_VARIABLE}
            -P "${PHASEKEY_EMBED_SCRIPT}"
    DEPENDS ${ARG_FILES} "${PHASEKEY_EMBED_SCRIPT}" "${list_file}"
    COMMENT "Embedding SQL into ${ARG_VARIABLE}"
    VERBATIM)
  target_sources(${target} PRIVATE "${out}")
endfunction()
